"""Session fixtures and hooks shared by the test suite.

``gpu`` marker: a test marked ``@pytest.mark.gpu`` needs CUDA GPUs; it skips, with the
reason, when torch is not installed or ``torch.cuda.is_available()`` is false (torch is
imported only when such a test is about to run). ``torch`` marker: the test needs PyTorch
(the ``calibrate`` extra, e.g. torchrun on CPU/gloo) and skips without it, except under
``CI=true``, where the README's install includes torch and a missing one is a failure.

``local_slurm``: a real single-node Slurm (munged, slurmctld, slurmd) on localhost,
started once per session as root (Debian's slurm-wlm, munge and libpmix2 are
and libpmix-dev, whose unversioned libpmix.so
Slurm's mpi/pmix plugin loads, are installed with apt-get when missing), its state in a temporary folder, stopped at
the end by the PIDs it wrote (nothing else is killed). Tests that use it skip with
the reason when it cannot run (not root, no packages), except under ``CI=true``,
where they fail instead.

Shared fixtures (for tests that only read what they get; a test that changes the object loads its own):
``shared_cluster(name, nodes=None, gpus=None)`` is ``load_cluster`` cached for the session,
``shared_profile(name)`` is ``resolve_profile`` cached for the session, ``cli`` runs
``clustersim ARGS`` in-process (:func:`cli_inprocess.clustersim`). ``checks.assert_close`` and
``checks.gap`` give the failure text of a numeric comparison (which row, by how much).

``_parse_large_yaml_once`` (autouse): each shipped profile is 40-80 KB of YAML, about 0.1 s to parse, and
the tests read them hundreds of times (every ``run_scenario`` reads its profile); the session parses each
large text once and hands every reader a fresh copy of the result.

Tiers: ``tests/unit`` runs in under a minute on two cores; ``tests/slow`` (marked ``slow``) holds
the unit-level tests that take seconds each, ``tests/integration`` the end-to-end ones. The default
``python -m pytest`` runs them all.
"""

from __future__ import annotations

import os
import pickle
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from collections import OrderedDict
from functools import cache
from pathlib import Path

import pytest
from cli_inprocess import clustersim


_NO_TORCH = "torch is not installed (pip install 'clustersim[calibrate]')"


@cache
def _torch():
    """The torch module, or None where it is not installed."""
    try:
        import torch
    except ImportError:
        return None
    return torch


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip ``torch``-marked tests without torch and ``gpu``-marked tests without a CUDA GPU."""
    needs_gpu = item.get_closest_marker("gpu") is not None
    if needs_gpu or item.get_closest_marker("torch") is not None:
        torch = _torch()
        if torch is None and not needs_gpu and os.environ.get("CI") == "true":
            pytest.fail(f"torch required under CI=true (the README installs the calibrate extra): {_NO_TORCH}")
        if torch is None:
            pytest.skip(f"needs CUDA GPUs: {_NO_TORCH}" if needs_gpu else f"needs torch: {_NO_TORCH}")
        if needs_gpu and not torch.cuda.is_available():
            pytest.skip("needs CUDA GPUs: torch.cuda.is_available() is False")


@dataclass
class LocalSlurm:
    """A running local Slurm: pass ``env`` to subprocesses that call sbatch/srun/scontrol."""

    dir: Path
    conf: Path
    env: dict[str, str] = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)
    partition: str = "debug"


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"local Slurm required under CI=true: {reason}")
    pytest.skip(reason)


def _free_ports(n: int) -> list[int]:
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


_PMIX_SO = ("/usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so", "/usr/lib/aarch64-linux-gnu/pmix2/lib/libpmix.so")
PACKAGES = ("slurm-wlm", "munge", "libpmix2", "libpmix-dev")


def _have_packages() -> bool:
    if not (shutil.which("slurmctld") and shutil.which("slurmd") and shutil.which("munged") and shutil.which("sbatch")):
        return False
    out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    if "libpmix.so.2" not in out:
        return False
    # Debian's Slurm PMIx plugin dlopens the unversioned <pmix2>/lib/libpmix.so, which only libpmix-dev ships
    return any(Path(p).exists() for p in _PMIX_SO)


def _install() -> str | None:
    """apt-get install the packages; returns an error text or None."""
    if not shutil.which("apt-get"):
        return "slurm-wlm/munge/libpmix2 missing and no apt-get to install them"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *PACKAGES]):
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
        if r.returncode != 0:
            return f"{' '.join(cmd)} failed: {(r.stderr or r.stdout).strip()[-400:]}"
    return None if _have_packages() else "packages installed but slurmctld/slurmd/munged/libpmix2 still missing"


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _stop(pids: dict[str, int]) -> None:
    for name in ("slurmd", "slurmctld", "munged"):
        pid = pids.get(name)
        if pid is None:
            continue
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        for _ in range(50):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        else:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.fixture(scope="session")
def local_slurm(tmp_path_factory: pytest.TempPathFactory):
    """Start munged + slurmctld + slurmd on localhost for this session (see the module docstring)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        _unavailable("local Slurm needs root (to run slurmd and munged)")
    if not _have_packages():
        err = _install()
        if err:
            _unavailable(err)
    d = tmp_path_factory.mktemp("slurm")
    for sub in ("state", "spool", "log", "munge", "run"):
        (d / sub).mkdir()
    os.chmod(d / "munge", 0o700)
    key = d / "munge" / "munge.key"
    if subprocess.run(["mungekey", "-c", "-k", str(key)], capture_output=True).returncode != 0:
        key.write_bytes(os.urandom(1024))
    os.chmod(key, 0o400)
    sock = d / "run" / "munge.sock"
    pids: dict[str, int] = {}
    try:
        r = subprocess.run(["munged", "-f", "-S", str(sock), f"--key-file={key}", f"--pid-file={d / 'munged.pid'}",
                            f"--log-file={d / 'log' / 'munged.log'}", f"--seed-file={d / 'munge' / 'seed'}"],
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            _unavailable(f"munged did not start: {r.stderr.strip()}")
        pid = _read_pid(d / "munged.pid")
        if pid:
            pids["munged"] = pid
        host = socket.gethostname().split(".")[0]
        ctld_port, d_port = _free_ports(2)
        conf = d / "slurm.conf"
        conf.write_text(f"""ClusterName=local
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
AuthType=auth/munge
AuthInfo=socket={sock}
StateSaveLocation={d / 'state'}
SlurmdSpoolDir={d / 'spool'}
SlurmctldPidFile={d / 'slurmctld.pid'}
SlurmdPidFile={d / 'slurmd.pid'}
SlurmctldLogFile={d / 'log' / 'slurmctld.log'}
SlurmdLogFile={d / 'log' / 'slurmd.log'}
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
NodeName={host} NodeAddr=127.0.0.1 CPUs={os.cpu_count() or 1} RealMemory=2000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
""")
        env = {**os.environ, "SLURM_CONF": str(conf)}
        for daemon in ("slurmctld", "slurmd"):
            r = subprocess.run([daemon, "-f", str(conf)], capture_output=True, text=True, env=env, timeout=60)
            if r.returncode != 0:
                raise RuntimeError(f"{daemon} did not start: {r.stderr.strip()}")
            for _ in range(50):
                pid = _read_pid(d / f"{daemon}.pid")
                if pid:
                    pids[daemon] = pid
                    break
                time.sleep(0.1)
        for _ in range(60):
            r = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, env=env)
            if any(s in r.stdout for s in ("idle", "mix", "alloc")):
                break
            time.sleep(1)
        else:
            logs = "".join((d / "log" / f).read_text()[-800:] for f in ("slurmctld.log", "slurmd.log")
                           if (d / "log" / f).exists())
            raise RuntimeError(f"the local Slurm node never became idle; logs:\n{logs}")
        yield LocalSlurm(dir=d, conf=conf, env=env, pids=pids)
    finally:
        _stop(pids)


@pytest.fixture(scope="session")
def shared_cluster():
    """``load_cluster(name_or_path, nodes=None, gpus=None)`` built once per session and argument set.

    The same object is handed to every test that asks for the same arguments: use it only to read
    (``with_p2p``/``with_gdr`` return copies); a test that changes a cluster loads its own.
    """
    from clustersim.topology import load_cluster

    @cache
    def get(name_or_path: str | Path, nodes: int | None = None, gpus: int | None = None):
        return load_cluster(name_or_path, nodes=nodes, gpus=gpus)

    return get


@pytest.fixture(scope="session")
def shared_profile():
    """``resolve_profile(name_or_path)`` read once per session: use it only to read."""
    from clustersim.collectives import resolve_profile

    return cache(resolve_profile)


@pytest.fixture
def cli():
    """``cli(*args, cwd=None, env=None)``: ``clustersim ARGS`` in this process, a result with
    ``returncode``, ``stdout`` and ``stderr`` (see ``tests/cli_inprocess.py``)."""
    return clustersim


#: texts shorter than this parse in a millisecond or two (topologies, scenarios, ``--set`` values): not kept
_YAML_MEMO_MIN_CHARS = 4096
#: the shipped profiles, their variants written by tests and the large topologies fit; older ones are dropped
_YAML_MEMO_ENTRIES = 32


@pytest.fixture(scope="session", autouse=True)
def _parse_large_yaml_once():
    """Keep the result of ``clustersim.config.base.parse_yaml_text`` for each large text it has parsed.

    ``parse_yaml_text`` is a function of its text alone (``file`` and ``what`` only name the input in an
    error). A text seen before gets a new copy of the same result (a pickle round trip: a deep copy, 60x
    cheaper than parsing 80 KB again), so a caller may change what it gets (``--set`` overrides do) without
    touching what the next caller reads. Errors are raised each time, never kept. ``load_yaml``'s checks
    (missing, oversized, binary, not UTF-8) run on every read as before.
    """
    from clustersim.config import base

    original = getattr(base, "parse_yaml_text", None)
    if original is None:  # the module was restructured: run without the memo, only slower
        import warnings

        warnings.warn("clustersim.config.base.parse_yaml_text not found: large YAML files are parsed on every read")
        yield
        return
    memo: OrderedDict[str, bytes] = OrderedDict()

    def parse_yaml_text(text, *, file=None, what="YAML"):
        if len(text) < _YAML_MEMO_MIN_CHARS:
            return original(text, file=file, what=what)
        kept = memo.get(text)
        if kept is None:
            data = original(text, file=file, what=what)
            kept = memo[text] = pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
            if len(memo) > _YAML_MEMO_ENTRIES:
                memo.popitem(last=False)
        else:
            memo.move_to_end(text)
        return pickle.loads(kept)

    base.parse_yaml_text = parse_yaml_text
    try:
        yield
    finally:
        base.parse_yaml_text = original
