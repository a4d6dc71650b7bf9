"""A server that dies of a CPU fault while starting is started once more with --no-repack (a VM
that advertises AMX but faults on it: docs/llm.md). A fake llama-server stands in (fast)."""
from __future__ import annotations

import sys
import textwrap
import urllib.request

from task_learning.llm.local_server import NO_REPACK, LocalServer
from task_learning.llm.settings import LocalSettings

_FAKE = textwrap.dedent('''
    import http.server, os, signal, sys
    if "--no-repack" not in sys.argv:
        os.kill(os.getpid(), signal.SIGSEGV)
    port = int(sys.argv[sys.argv.index("--port") + 1])

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"status": "ok"}')

        def log_message(self, *args):
            pass

    http.server.HTTPServer(("127.0.0.1", port), Health).serve_forever()
''')


def _fake_binary(tmp_path):
    script = tmp_path / "llama-server"
    script.write_text(f"#!{sys.executable}\n{_FAKE}")
    script.chmod(0o755)
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    return script, model


def test_a_fault_while_starting_restarts_the_server_without_repacked_kernels(tmp_path, caplog):
    binary, model = _fake_binary(tmp_path)
    server = LocalServer(LocalSettings(startup_timeout_s=30.0), model=str(model), binary=binary)
    try:
        url = server.start()
        assert server.no_repack and NO_REPACK in server.command(server.port)
        with urllib.request.urlopen(url.removesuffix("/v1") + "/health", timeout=5) as answer:
            assert b"ok" in answer.read()
        assert any("SIGSEGV" in r.getMessage() and NO_REPACK in r.getMessage() for r in caplog.records)
    finally:
        server.stop()


def test_no_repack_is_not_added_twice_when_configured(tmp_path):
    binary, model = _fake_binary(tmp_path)
    server = LocalServer(LocalSettings(extra_args=(NO_REPACK,)), model=str(model), binary=binary)
    assert server.no_repack and server.command(1234).count(NO_REPACK) == 1
