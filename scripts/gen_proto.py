#!/usr/bin/env python3
"""Regenerate tuidebug/_proto/*_pb2*.py(i) from proto/*.proto with grpc_tools.protoc.

Usage: python scripts/gen_proto.py [--force] [OUT_DIR]   (default: tuidebug/_proto)

The committed modules are generated with grpcio-tools 1.63.0 on purpose: its gencode
(protobuf 5.26.1) has no runtime-version check, so it imports on every protobuf from
5.26.1 up (5.x, 6.x and 7.x were tried), while gencode from newer tools refuses any runtime
older than itself or of another major version. Its gRPC stubs need grpcio >= 1.63
(`_registered_method`). pyproject's floors (protobuf>=5.26.1, grpcio>=1.63) follow from
this; to regenerate, use a throw-away venv:

    python3 -m venv /tmp/gt && /tmp/gt/bin/pip install grpcio-tools==1.63.0
    /tmp/gt/bin/python scripts/gen_proto.py

Writing into the package with another grpcio-tools version needs --force, because it
would silently raise those floors.

protoc writes `import debug_graph_pb2` (an absolute, top-level import) because the
.proto files import each other by bare file name; inside our package that import would
fail, so it is rewritten into a package-relative one. tests/online/test_proto.py calls
`generate()` into a temporary directory to detect committed modules that are stale.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

GENERATOR_VERSION = "1.63.0"  # grpcio-tools version the committed modules come from

REPO = Path(__file__).resolve().parent.parent
PROTO_DIR = REPO / "proto"
DEFAULT_OUT = REPO / "tuidebug" / "_proto"
PROTO_FILES = ("debug_graph.proto", "debug_grpc.proto", "dump_data.proto", "tfdbg_event.proto")
GENERATED = (
    "debug_graph_pb2.py",
    "debug_graph_pb2.pyi",
    "dump_data_pb2.py",
    "dump_data_pb2.pyi",
    "debug_grpc_pb2.py",
    "debug_grpc_pb2.pyi",
    "debug_grpc_pb2_grpc.py",
    "tfdbg_event_pb2.py",
    "tfdbg_event_pb2.pyi",
)

# `import debug_graph_pb2 as debug__graph__pb2` → `from . import debug_graph_pb2 as ...`
_ABS_IMPORT = re.compile(r"^import (debug_\w+_pb2)( as \w+)?$", re.MULTILINE)


def _relativise(text: str) -> str:
    return _ABS_IMPORT.sub(lambda m: f"from . import {m.group(1)}{m.group(2) or ''}", text)


def generate(out_dir: Path = DEFAULT_OUT) -> list[Path]:
    """Run protoc into ``out_dir`` and fix imports; return the generated files."""
    # Imported lazily so that merely importing this module (e.g. from a test that is
    # about to skip) does not require grpcio-tools.
    from grpc_tools import protoc

    out_dir.mkdir(parents=True, exist_ok=True)
    args = [
        "grpc_tools.protoc",
        f"--proto_path={PROTO_DIR}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        *(str(PROTO_DIR / name) for name in PROTO_FILES),
    ]
    rc = protoc.main(args)
    if rc != 0:
        raise RuntimeError(f"protoc failed with exit code {rc}")
    paths = []
    for name in GENERATED:
        path = out_dir / name
        path.write_text(_relativise(path.read_text(encoding="utf-8")), encoding="utf-8")
        paths.append(path)
    # protoc also emits an (empty) grpc module for each service-less proto (the graph, the
    # Ascend `.bin` dump header and TensorFlow's DebugEvent); we do not ship them.
    (out_dir / "debug_graph_pb2_grpc.py").unlink(missing_ok=True)
    (out_dir / "dump_data_pb2_grpc.py").unlink(missing_ok=True)
    (out_dir / "tfdbg_event_pb2_grpc.py").unlink(missing_ok=True)
    return paths


def installed_generator_version() -> str:
    from importlib.metadata import version

    return version("grpcio-tools")


def main(argv: list[str]) -> int:
    args = argv[1:]
    force = "--force" in args
    args = [a for a in args if a != "--force"]
    out = Path(args[0]) if args else DEFAULT_OUT
    installed = installed_generator_version()
    if out.resolve() == DEFAULT_OUT.resolve() and installed != GENERATOR_VERSION and not force:
        print(
            f"grpcio-tools {installed} is installed but the package modules are generated "
            f"with {GENERATOR_VERSION} (see this script's docstring); use --force to override.",
            file=sys.stderr,
        )
        return 2
    for path in generate(out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
