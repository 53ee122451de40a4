"""The Python examples run end to end (small sizes)."""
import os
import pathlib
import subprocess
import sys

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def _run(script, *args, timeout=240):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True,
                          timeout=timeout, env=env)
    assert proc.returncode == 0, f"{script} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_train_indexer_learns():
    """A small indexer learns: recall@k rises well above its start and the loss falls."""
    out = _run("train_indexer.py", "--keys", "512", "--queries", "32", "--heads", "8", "--dim", "32",
               "--topk", "32", "--steps", "40", "--lr", "1e-2", "--no-progress")
    summary = [line for line in out.splitlines() if line.startswith("summary:")]
    assert summary, out
    # summary: N steps in T s | loss/query a -> b | recall@K r0 -> r1 (chance c)
    parts = summary[0].split("|")
    l0, l1 = (float(x) for x in parts[1].split()[-3::2])
    r0, r1 = (float(x) for x in parts[2].split()[1:4:2])
    assert l1 < 0.7 * l0 and r1 > r0 + 0.2, summary[0]


def test_train_indexer_torch_kl_and_progress_bar():
    out = _run("train_indexer.py", "--keys", "256", "--queries", "16", "--heads", "4", "--dim", "16",
               "--topk", "8", "--steps", "3", "--kl", "torch")
    assert "summary: 3 steps" in out


def test_context_parallel_example():
    out = _run("context_parallel.py", "--keys", "256", "--queries", "64", "--heads", "4", "--dim", "16",
               "--topk", "16")
    assert "context parallel == single process: OK" in out, out
