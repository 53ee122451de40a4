import os

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
