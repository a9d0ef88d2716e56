"""Rank discovery from launcher environments (torchrun, Slurm, PMIx, Open MPI, PMI), node lists, GPU binding."""

from __future__ import annotations

import pytest

from clustersim.calibration import env as E
from clustersim.calibration.env import (
    device_for_local_rank,
    discover,
    expand_nodelist,
    local_rank_from_hosts,
)
from clustersim.errors import ClusterSimError


def test_torchrun():
    e = discover({"RANK": "5", "LOCAL_RANK": "1", "WORLD_SIZE": "8", "LOCAL_WORLD_SIZE": "4", "GROUP_RANK": "1",
                  "MASTER_ADDR": "node0", "MASTER_PORT": "29400", "CUDA_VISIBLE_DEVICES": "0,1,2,3",
                  # Slurm variables of the surrounding allocation must not win over torchrun's
                  "SLURM_PROCID": "1", "SLURM_NTASKS": "2"}, hostname="node1")
    assert (e.launcher, e.rank, e.local_rank, e.world_size, e.local_world_size) == ("torchrun", 5, 1, 8, 4)
    assert (e.node_rank, e.num_nodes, e.master_addr, e.master_port, e.device_index) == (1, 2, "node0", 29400, 1)
    assert e.torch_env() == {"RANK": "5", "WORLD_SIZE": "8", "MASTER_ADDR": "node0", "MASTER_PORT": "29400",
                             "LOCAL_RANK": "1"}


def test_slurm_with_scontrol_fallback(monkeypatch):
    monkeypatch.setattr(E.shutil, "which", lambda name: None)  # no scontrol: pure-Python expansion
    env = {"SLURM_PROCID": "9", "SLURM_LOCALID": "1", "SLURM_NTASKS": "16", "SLURM_NODEID": "1",
           "SLURM_JOB_NODELIST": "gpu[07-08]", "SLURM_TASKS_PER_NODE": "8(x2)", "SLURM_JOB_ID": "1234",
           "SLURM_NNODES": "2", "PMIX_RANK": "9", "CUDA_VISIBLE_DEVICES": "1"}
    e = discover(env, hostname="gpu08")
    assert (e.launcher, e.rank, e.local_rank, e.world_size, e.local_world_size) == ("slurm", 9, 1, 16, 8)
    assert e.master_addr == "gpu07" and e.nodelist == ["gpu07", "gpu08"] and e.num_nodes == 2
    assert e.master_port == 20000 + 1234 % 20000  # the same on every task, as the sbatch script exports
    assert e.pmix and e.job_id == "1234"
    assert e.device_index == 0  # --gpus-per-task=1: Slurm left one visible device
    e2 = discover({**env, "MASTER_PORT": "31000", "MASTER_ADDR": "ib-gpu07"}, hostname="gpu08")
    assert (e2.master_addr, e2.master_port) == ("ib-gpu07", 31000)


def test_slurm_uses_scontrol(monkeypatch):
    calls = []

    class R:
        returncode = 0
        stdout = "alpha\nbeta\n"

    def fake_run(cmd, **kw):
        calls.append(cmd)
        return R()

    monkeypatch.setattr(E.shutil, "which", lambda name: "/usr/bin/scontrol" if name == "scontrol" else None)
    monkeypatch.setattr(E.subprocess, "run", fake_run)
    e = discover({"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_JOB_NODELIST": "odd-format{1,2}"}, hostname="alpha")
    assert calls == [["/usr/bin/scontrol", "show", "hostnames", "odd-format{1,2}"]]
    assert e.master_addr == "alpha" and e.nodelist == ["alpha", "beta"]


def test_openmpi_pmi_pmix_single():
    e = discover({"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "3",
                  "OMPI_COMM_WORLD_LOCAL_SIZE": "4"}, hostname="h")
    assert (e.launcher, e.rank, e.local_rank, e.master_addr) == ("openmpi", 3, 3, "127.0.0.1")
    with pytest.raises(ClusterSimError, match="MASTER_ADDR"):
        discover({"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "8", "OMPI_COMM_WORLD_LOCAL_SIZE": "4"})
    e = discover({"PMI_RANK": "1", "PMI_SIZE": "2", "MPI_LOCALRANKID": "1", "MASTER_ADDR": "x"}, hostname="h")
    assert (e.launcher, e.rank, e.world_size, e.local_rank) == ("pmi", 1, 2, 1)
    # plain PMIx: no local rank in the environment -> found later from host names
    e = discover({"PMIX_RANK": "2", "WORLD_SIZE_UNUSED": "", "PMIX_SIZE": "4", "MASTER_ADDR": "m"}, hostname="h")
    assert (e.launcher, e.rank, e.world_size, e.local_rank, e.device_index) == ("pmix", 2, 4, None, None)
    with pytest.raises(ClusterSimError, match="world size"):
        discover({"PMIX_RANK": "0"})
    e = discover({}, hostname="h")
    assert (e.launcher, e.rank, e.world_size, e.local_rank, e.master_addr) == ("single", 0, 1, 0, "127.0.0.1")
    assert 0 < e.master_port < 65536
    assert discover({"MASTER_PORT": "29511"}).master_port == 29511


@pytest.mark.parametrize("env,match", [
    ({"RANK": "2", "WORLD_SIZE": "2"}, "outside world size"),
    ({"RANK": "x", "WORLD_SIZE": "2"}, "not an integer"),
    ({"RANK": "0", "WORLD_SIZE": "0"}, ">= 1"),
    ({"RANK": "0", "WORLD_SIZE": "2", "MASTER_PORT": "70000"}, "TCP port"),
    ({"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_JOB_NODELIST": "n[3-1]"}, "bad range"),
])
def test_bad_environments(env, match, monkeypatch):
    monkeypatch.setattr(E.shutil, "which", lambda name: None)
    with pytest.raises(ClusterSimError, match=match):
        discover(env, hostname="h")


@pytest.mark.parametrize("text,hosts", [
    ("gpu[01-03,07],cpu5", ["gpu01", "gpu02", "gpu03", "gpu07", "cpu5"]),
    ("n1", ["n1"]),
    ("", []),
    ("a[8-11]", ["a8", "a9", "a10", "a11"]),
    ("rack[1-2]-n[01-02]", ["rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"]),
    ("x[001-002],y,z[9]", ["x001", "x002", "y", "z9"]),
])
def test_expand_nodelist(text, hosts):
    assert expand_nodelist(text) == hosts


@pytest.mark.parametrize("text", ["gpu[01-03", "gpu]1[", "gpu[a-b]", "gpu[]"])
def test_expand_nodelist_rejects(text):
    with pytest.raises(ClusterSimError):
        expand_nodelist(text)


def test_device_binding_and_local_rank():
    assert device_for_local_rank(0, "3") == 0
    assert device_for_local_rank(2, "4,5,6,7") == 2
    assert device_for_local_rank(5, None) == 5
    assert device_for_local_rank(None, "0,1") is None
    with pytest.raises(ClusterSimError, match="one task per GPU"):
        device_for_local_rank(2, "0,1")
    assert local_rank_from_hosts(0, ["a", "b", "a"]) == 0
    assert local_rank_from_hosts(2, ["a", "b", "a"]) == 1
    with pytest.raises(ClusterSimError):
        local_rank_from_hosts(3, ["a"])
