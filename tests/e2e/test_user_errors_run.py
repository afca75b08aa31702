"""Every user mistake gets a specific message (file, line / field, what was expected) and exit status 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from beluga_core.cli.app import main


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return int(exc.value.code or 0), " ".join(err.split())


# --------------------------------------------------------------------------------- CheckList tarballs

def _hostile(kind: str, marker: Path) -> bytes:
    """A pickle that, loaded by plain ``pickle``, creates ``marker`` (the sentinel) through ``kind``."""
    import os
    import pickle
    import subprocess

    calls = {"os.system": (os.system, (f"touch {marker}",)),
             "eval": (eval, (f"open({str(marker)!r}, 'w').close()",)),
             "subprocess.call": (subprocess.call, (["touch", str(marker)],))}

    class Exploit:
        def __reduce__(self) -> tuple[object, tuple[object, ...]]:
            return calls[kind]

    return pickle.dumps(Exploit(), protocol=2)


def _tarball(path: Path, members: dict[str, bytes]) -> Path:
    import io
    import tarfile

    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


@pytest.mark.parametrize("kind", ["os.system", "eval", "subprocess.call"])
def test_hostile_pickle_in_a_tarball_runs_nothing(kind: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    import pickle

    proof = tmp_path / "proof"
    pickle.loads(_hostile(kind, proof))  # the payload is real: plain pickle runs it
    assert proof.exists()
    marker = tmp_path / "pwned"
    tarball = _tarball(tmp_path / "suite.tar.gz", {"suite/sentiment_suite.pkl": _hostile(kind, marker)})
    out = tmp_path / "o.jsonl.gz"
    code, err = run_cli(["suite", "import-checklist", str(tarball), "--out", str(out)], capsys)
    assert code == 2 and str(tarball) in err and "refusing to load" in err, err
    assert not marker.exists() and not out.exists()


# --------------------------------------------------------------------------------- result stores
