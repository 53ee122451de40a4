# Cross build for 64-bit ARM Linux with Debian's cross toolchain (gcc-aarch64-linux-gnu,
# g++-aarch64-linux-gnu, libc6-dev-arm64-cross) and qemu-user-static:
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
# The scalar and the neon kernel sets are compiled (the x86 sets need CMAKE_SYSTEM_PROCESSOR x86_64).
# ctest runs the test programs through the emulator, which finds the ARM loader and libc under
# the sysroot given with -L. `make test-aarch64` builds and runs the suite this way.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(LIG_AARCH64_TRIPLE aarch64-linux-gnu CACHE STRING "Prefix of the aarch64 cross tools")
set(LIG_AARCH64_SYSROOT /usr/${LIG_AARCH64_TRIPLE} CACHE PATH "Where the aarch64 libc and loader live")
set(CMAKE_C_COMPILER ${LIG_AARCH64_TRIPLE}-gcc)
# The aclnn front end's CANN-style samples are C++; without the cross g++ they are left out
# (aclnn/tests/CMakeLists.txt checks for a C++ compiler).
find_program(LIG_AARCH64_CXX ${LIG_AARCH64_TRIPLE}-g++)
if(LIG_AARCH64_CXX)
  set(CMAKE_CXX_COMPILER ${LIG_AARCH64_CXX})
endif()

find_program(LIG_AARCH64_QEMU NAMES qemu-aarch64-static qemu-aarch64)
if(LIG_AARCH64_QEMU)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${LIG_AARCH64_QEMU} -L ${LIG_AARCH64_SYSROOT})
endif()

# Libraries and headers from the target's tree only; programs (cmake, pkg-config) from the host.
set(CMAKE_FIND_ROOT_PATH ${LIG_AARCH64_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
