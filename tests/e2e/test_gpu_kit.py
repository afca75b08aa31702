"""The GPU check kit's dry mode (benchmarks/gpu/README.md): what is carried fits the calls, every carried wheel's
requirements are met, the lock covers what beluga needs today, and run.sh's steps fit its budget."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO

from benchmarks.gpu import prepare

ROOT = REPO
KIT = ROOT / "benchmarks" / "gpu"


def test_the_dry_mode_passes_on_this_checkout() -> None:
    done = subprocess.run([sys.executable, "-m", "benchmarks.gpu.prepare", str(ROOT / ".gpu"), "--dry"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "weights' chunk" in done.stdout and "problem" not in done.stdout
    plan = subprocess.run(["bash", str(KIT / "run.sh"), ".gpu", "--dry"], capture_output=True, text=True,
                          timeout=30)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert "profile check: budget 540 s; the caps add up to 540 s" in plan.stdout, plan.stdout
    assert "profile packs: budget 540 s; the caps add up to 530 s" in plan.stdout, plan.stdout
    assert "profile ray: budget 540 s; the caps add up to 500 s" in plan.stdout, plan.stdout
    ray = subprocess.run([sys.executable, "-m", "benchmarks.gpu.prepare", str(ROOT / ".gpu"), "--dry", "--profile",
                          "ray"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert ray.returncode == 0 and "chunk of ray" in ray.stdout and "problem" not in ray.stdout, ray.stdout
    unknown = subprocess.run(["bash", str(KIT / "run.sh"), ".gpu", "--dry"], capture_output=True, text=True,
                             timeout=30, env={"PATH": "/usr/bin:/bin", "BELUGA_GPU_PROFILE": "fast"})
    assert unknown.returncode == 2, unknown.stderr
    assert "BELUGA_GPU_PROFILE=fast: no such profile; the profiles are: check,packs,ray" in unknown.stderr


def test_without_a_profile_the_next_one_not_recorded_runs(tmp_path: Path) -> None:
    """GPU time is rare: each lent machine runs the first profile of the ranking that recorded.txt does not list."""
    script = tmp_path / "run.sh"
    script.write_text((KIT / "run.sh").read_text())

    def selected(recorded: str) -> str:
        (tmp_path / "recorded.txt").write_text(recorded)
        plan = subprocess.run(["bash", str(script), ".gpu", "--dry"], capture_output=True, text=True, timeout=30,
                              env={"PATH": "/usr/bin:/bin"})
        assert plan.returncode == 0, plan.stderr
        return plan.stdout.split("profile ", 1)[1].split(" selected", 1)[0]

    assert selected("# nothing yet\n") == "check"
    assert selected("check 0dbf356 2026-11-27\n") == "packs"
    assert selected("check 0dbf356 2026-11-27\npacks 1234567 2026-12-01\n") == "ray"
    assert selected("check a\npacks b\nray c\n") == "check"   # every one recorded: the check again


def test_requirements_are_checked_against_the_image_and_the_kit() -> None:
    image = {"numpy": "2.5.2", "torch": None}
    lock = {"captum": prepare.Locked("captum", "0.9.0", "c.whl", 1, "x", ["numpy>=3", "torch", "tqdm",
                                                                       "sphinx; extra == 'dev'"]),
            "pydantic": prepare.Locked("pydantic", "2.14.4", "p.whl", 1, "x", ["pydantic-core==2.50.5"])}
    problems = prepare.requirement_problems(lock, image)
    assert problems == ["captum 0.9.0 needs numpy>=3; the image has numpy 2.5.2",
                        "captum 0.9.0 needs tqdm: neither the image nor the kit has tqdm",
                        "pydantic 2.14.4 needs pydantic-core==2.50.5: neither the image nor the kit has "
                        "pydantic-core"]
    lock["pydantic-core"] = prepare.Locked("pydantic_core", "2.50.4", "pc.whl", 1, "x", [])
    assert prepare.requirement_problems(lock, image)[-1] == ("pydantic 2.14.4 needs pydantic-core==2.50.5; the kit "
                                                          "carries pydantic-core 2.50.4")


def test_parts_fit_a_call_beside_the_tree() -> None:
    mib = 1 << 20
    wheels = {"duckdb": 24 * mib, "pydantic-core": 2 * mib, "nltk": 2 * mib, "tiny": mib // 2}
    # 12 MiB of project and model files, 87 MiB of weights, a 14 MiB tree: 64 − 14 − 2 = 48 MiB of room per call.
    parts = prepare.plan_parts(12 * mib, wheels, 87 * mib, 14 * mib)
    assert [(p.name, p.wheels, p.weights) for p in parts] == [
        ("part1", ("tiny", "nltk", "pydantic-core", "duckdb"), False), ("part2", (), True), ("part3", (), True)]
    assert parts[0].size == 40 * mib + mib // 2
    assert sum(p.size for p in parts[1:]) == 87 * mib and all(p.size <= 48 * mib for p in parts)
    # The tree grew by 10 MiB: 38 MiB of room, so duckdb spills into a part of its own, before the weights.
    grown = prepare.plan_parts(12 * mib, wheels, 87 * mib, 24 * mib)
    assert [(p.name, p.wheels, p.weights) for p in grown] == [
        ("part1", ("tiny", "nltk", "pydantic-core"), False), ("part2", ("duckdb",), False),
        ("part3", (), True), ("part4", (), True), ("part5", (), True)]
    assert all(p.size <= 38 * mib for p in grown) and sum(p.size for p in grown[2:]) == 87 * mib
    with pytest.raises(SystemExit, match="over the 64 MiB"):
        prepare.plan_parts(49 * mib, {}, 87 * mib, 14 * mib)
    # A 40 MiB tree leaves 22 MiB: duckdb (24 MiB) fits no part, so it travels in byte chunks, as the weights do.
    tight = prepare.plan_parts(12 * mib, wheels, 87 * mib, 40 * mib)
    assert [p.chunk_of for p in tight] == [None, "duckdb", "duckdb", None, None, None, None]
    assert sum(p.size for p in tight if p.chunk_of) == 24 * mib and all(p.size <= 22 * mib for p in tight)


def test_spilled_wheels_and_chunks_land_where_the_manifest_says(tmp_path: Path) -> None:
    (tmp_path / "part1" / "wheels").mkdir(parents=True)
    locked = {n: prepare.Locked(n, "1", f"{n}-1-py3-none-any.whl", 1, "x", []) for n in ("a", "b")}
    for w in locked.values():
        (tmp_path / "part1" / "wheels" / w.filename).write_bytes(b"w")
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(bytes(range(10)))
    big = prepare.Locked("big", "1", "big-1-py3-none-any.whl", 7, "sha", [])
    locked["big"] = big
    (tmp_path / "part1" / "wheels" / big.filename).write_bytes(b"0123456")
    parts = [prepare.Part("part1", 1, ("a",)), prepare.Part("part2", 1, ("b",)), prepare.Part("part3", 6, (), True),
             prepare.Part("part4", 4, (), True), prepare.Part("part5", 4, chunk_of="big"),
             prepare.Part("part6", 3, chunk_of="big")]
    joined = prepare.spill_wheels(parts, locked, tmp_path)
    assert joined == [{"file": big.filename, "sha256": "sha", "size": 7,
                       "chunks": [f"part5/{big.filename}.000", f"part6/{big.filename}.001"]}]
    assert b"".join((tmp_path / c).read_bytes() for c in joined[0]["chunks"]) == b"0123456"   # type: ignore[union-attr]
    chunks = prepare.split(weights, parts, tmp_path)
    assert sorted(p.name for p in (tmp_path / "part1" / "wheels").iterdir()) == ["a-1-py3-none-any.whl"]
    assert sorted(p.name for p in (tmp_path / "part2" / "wheels").iterdir()) == ["b-1-py3-none-any.whl"]
    assert chunks == ["part3/model.safetensors.000", "part4/model.safetensors.001"]
    assert b"".join((tmp_path / c).read_bytes() for c in chunks) == bytes(range(10))


def test_a_budget_over_nine_minutes_or_a_missing_step_is_refused(tmp_path: Path) -> None:
    script = (KIT / "run.sh").read_text()
    assert prepare.budget_problems(KIT / "run.sh") == []
    over = tmp_path / "run.sh"
    over.write_text(script.replace("step suite 145 ", "step suite 400 ").replace("step suite-eval 45 ", "true "))
    problems = prepare.budget_problems(over)
    assert any("lacks the steps suite-eval" in p for p in problems)
    assert any("profile check: the steps' caps add up to 750 s, over the 540 s budget" in p for p in problems)
    assert any("profile check names steps it lacks: suite-eval" in p for p in problems)


def test_the_lock_names_one_version_of_each_wheel() -> None:
    rows = json.loads((KIT / "wheels.lock").read_text())
    names = [r["name"].lower().replace("_", "-") for r in rows]
    assert len(names) == len(set(names)) and all(r["filename"].endswith(".whl") for r in rows)
    assert all("cp312" in r["filename"] or "py3" in r["filename"] or "py312" in r["filename"] for r in rows)


def test_the_ray_profiles_benchmark_writes_each_settings_config(tmp_path: Path) -> None:
    """bench_ray_slots runs one config as the multi executor at workers = "auto" and as Ray at N slots per GPU (N
    workers on a CPU); every config it writes must load, with those settings and the base's precision."""
    from beluga_core.config.load import load_config
    from benchmarks.perf import bench_ray_slots

    base = tmp_path / "quick.toml"
    base.write_text((ROOT / "benchmarks" / "quick.toml").read_text(encoding="utf-8"), encoding="utf-8")
    got = {}
    for setting in ("multi", "ray-1", "ray-8"):
        for device in ("cuda", "cpu"):
            spec = load_config(bench_ray_slots.setting_config(base, setting, device, tmp_path)).executor
            got[setting, device] = (spec.name, spec.device, spec.workers, spec.precision, dict(spec.options))
    assert got["multi", "cuda"] == ("multi", "cuda", "auto", "auto", {})
    assert got["ray-8", "cuda"] == ("ray", "cuda", "auto", "auto", {"folds_per_gpu": 8, "num_gpus": 1})
    assert got["ray-1", "cpu"] == ("ray", "cpu", 1, "auto", {"num_cpus": 1})
