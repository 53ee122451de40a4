import os

import pytest
import torch
import torch._functorch.config
from hypothesis import HealthCheck, settings
from hypothesis.configuration import set_hypothesis_home_dir

# Hypothesis keeps a small cache; keep it inside python/ (git-ignored there), not in the cwd.
set_hypothesis_home_dir(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, ".hypothesis"))

# Deterministic by default (CI); LIG_HYPOTHESIS_PROFILE=explore draws fresh examples each run.
settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "explore",
    parent=settings.get_profile("ci"),
    derandomize=False,
    max_examples=2000,
)
settings.load_profile(os.environ.get("LIG_HYPOTHESIS_PROFILE", "ci"))

# torch.compile's on-disk AOTAutograd cache finds a compiled function by its forward graph, which
# does not change when a custom op's Python backward does: after an edit to a backward rule, the
# compile tests would run the stale one from the cache. Trace the backward afresh each session
# (inductor's own cache stays on: it is keyed by the traced graphs themselves).
torch._functorch.config.enable_autograd_cache = False


@pytest.fixture
def no_allocation(monkeypatch):
    """Records every torch.empty call (the operators allocate their outputs with it): a test that
    asserts the list is empty after an error proves the error came before any allocation."""
    calls = []
    real = torch.empty

    def spy(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(torch, "empty", spy)
    return calls
