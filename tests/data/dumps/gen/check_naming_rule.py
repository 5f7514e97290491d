"""Check spec §5.2a's file-naming rule on MindSpore 2.4+ (here 2.10.0) dumps.

usage: python check_naming_rule.py DUMP_ROOT [DUMP_ROOT ...] [--json OUT.json] [-v]

Rule: a kernel's tensor files are named after `<scope>/<Type>-op<k>` with `/` -> `_`, where k is
the index of the node among the nodes of the same scope and the same op type, in `.pb` node
order, counting on across the rank's graphs in graph-id order. The `.pb`, `.ir` and the
execution-order CSV keep the graph's own `-opN`.

For every rank and every kernel (operator node of the `.pb`s, read with tuidebug's own reader),
this computes the predicted dump name and looks for it among the rank's `.npy` files
(`<net>/<graph id>/<iteration>/`, file grammar `{type}.{op_name}.{task}.{stream}.{ts}.{io}.{slot}
.{format}.{dtype}.npy`). Per dump it reports:
- kernels: operator nodes in the graphs; with files: kernels whose predicted name has files;
- files predicted: kernel `.npy` files (not `Parameter.*`) whose op_name is the predicted name of
  a kernel of the same op type in the graph of the folder they sit in, out of all kernel files;
  files in a graph folder whose name only a kernel of another graph predicts are listed apart;
- type checks: every output file of a kernel with files against the node's declared output type
  (`.pb` output_type: DataType and shape of the slot); the dtype field of the file name and the
  npy header must both agree;
- renamed: kernels whose predicted name differs from their own graph name; own name taken:
  renamed kernels whose own graph name has files on disk, which then belong to another kernel
  (and how many of those contradict the node's declared dtype or shape);
- unexplained: on-disk kernel names that no kernel of the rank predicts (data with no graph).
Exit status 0 when every kernel file is predicted and every type check passes (a file whose shape
differs from the declared one with the same element count, e.g. () for (1, 1), is listed but
not counted as a failure).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from tuidebug.core.graph_pb import dtype_label, graph_from_proto, parse_model_proto

PB_RE = re.compile(r"^ms_output_trace_code_graph_(\d+)\.pb$")
# Virtual nodes: MindSpore never dumps tensors for these.
VIRTUAL = {
    "MakeTuple",
    "TupleGetItem",
    "Depend",
    "UpdateState",
    "Load",
    "Return",
    "Partial",
    "Switch",
    "SwitchLayer",
    "Call",
}


def parse_file_name(name: str) -> dict | None:
    """2.4+ grammar, parsed from the right (op names may not contain dots, types never do)."""
    if not name.endswith(".npy"):
        return None
    parts = name[:-4].split(".")
    if len(parts) < 9 or not parts[-3].isdigit():
        return None
    return {
        "op_type": parts[0],
        "op_name": ".".join(parts[1:-7]),
        "task": parts[-7],
        "stream": parts[-6],
        "timestamp": parts[-5],
        "io": parts[-4],
        "slot": int(parts[-3]),
        "format": parts[-2],
        "dtype": parts[-1],
    }


def load_rank(rank_dir: Path):
    """[(graph_id, [(full_name, op_type, scope, outputs)])] in graph-id order."""
    graphs = []
    for pb_path in sorted(
        (rank_dir / "graphs").glob("ms_output_trace_code_graph_*.pb"),
        key=lambda p: int(PB_RE.match(p.name).group(1)),
    ):
        gid = int(PB_RE.match(pb_path.name).group(1))
        proto = parse_model_proto(pb_path.read_bytes(), str(pb_path)).graph
        for p in proto.node:  # stacks play no part here
            p.ClearField("source_address")
        graph = graph_from_proto(proto, None, limit=None)
        protos = [n for n in proto.node if n.name]
        ops = graph.operators
        assert len(ops) == len(protos), pb_path
        kernels = []
        for node, p in zip(ops, protos, strict=True):
            full = p.full_name or node.name
            scope = full.rsplit("/", 1)[0] if "/" in full else ""
            kernels.append((full, p.op_type, scope, node.outputs))
        graphs.append((gid, kernels))
    return graphs


def scan_files(rank_dir: Path):
    """{(graph_id, op_name): [(iteration, parsed, path)]} for every non-Parameter npy file."""
    files = defaultdict(list)
    for net_dir in sorted(
        p
        for p in rank_dir.iterdir()
        if p.is_dir() and p.name not in ("graphs", "execution_order") and not p.name.startswith(".")
    ):
        for gdir in net_dir.iterdir():
            if not gdir.name.isdigit():
                continue
            for idir in gdir.iterdir():
                if not idir.name.isdigit():
                    continue
                for f in idir.iterdir():
                    parsed = parse_file_name(f.name)
                    if parsed is None or parsed["op_type"] == "Parameter":
                        continue
                    files[(int(gdir.name), parsed["op_name"])].append((int(idir.name), parsed, f))
    return files


def check_types(spec_by_slot, entries):
    """Mismatches of output files against the declared output specs."""
    bad = []
    for _it, parsed, path in entries:
        if parsed["io"] != "output":
            continue
        spec = spec_by_slot.get(parsed["slot"])
        if spec is None or spec.dtype is None:
            bad.append(f"{path.name}: no declared type for slot {parsed['slot']}")
            continue
        want = dtype_label(spec.dtype)
        arr = np.load(path, allow_pickle=False, mmap_mode="r")
        got = {"name": parsed["dtype"], "npy": arr.dtype.name}
        if parsed["dtype"].lower() != want.lower() or arr.dtype.name != want.lower():
            bad.append(f"{path.name}: dtype {got} vs declared {want}")
        if spec.shape is not None and tuple(arr.shape) != tuple(spec.shape):
            same_size = int(np.prod(arr.shape)) == int(np.prod(spec.shape))
            kind = "shape (same element count)" if same_size else "shape"
            bad.append(f"{path.name}: {kind} {tuple(arr.shape)} vs declared {tuple(spec.shape)}")
    return bad


def check_rank(rank_dir: Path, verbose: bool) -> dict:
    graphs = load_rank(rank_dir)
    files = scan_files(rank_dir)
    counter: dict[tuple[str, str], int] = defaultdict(int)
    predicted: dict[tuple[int, str], tuple[str, str]] = {}  # (gid, dump name) -> (kernel, type)
    kernels = []
    for gid, ks in graphs:
        for full, op_type, scope, outputs in ks:
            k = counter[(scope, op_type)]
            counter[(scope, op_type)] += 1
            pred = (f"{scope}/{op_type}-op{k}" if scope else f"{op_type}-op{k}").replace("/", "_")
            own = full.replace("/", "_")
            predicted[(gid, pred)] = (full, op_type)
            kernels.append((gid, full, op_type, pred, own, {s.slot: s for s in outputs}))
    rep = {
        "rank": rank_dir.name,
        "graphs": [g for g, _ in graphs],
        "graphs_with_files": sorted({g for g, _ in files}),
        "kernels": len(kernels),
        "virtual_kernels": sum(1 for k in kernels if k[2] in VIRTUAL),
    }
    with_files = renamed = own_taken = own_taken_contradicts = 0
    type_checked = 0
    type_bad: list[str] = []
    no_files_real: list[str] = []
    own_taken_list = []
    for gid, full, op_type, pred, own, specs in kernels:
        entries = files.get((gid, pred), [])
        entries = [e for e in entries if e[1]["op_type"] == op_type]
        if entries:
            with_files += 1
            outs = [e for e in entries if e[1]["io"] == "output"]
            type_checked += len(outs)
            type_bad += check_types(specs, entries)
        elif op_type not in VIRTUAL:
            no_files_real.append(f"graph {gid}: {full}")
        if pred != own:
            renamed += 1
            theirs = [e for e in files.get((gid, own), []) if e[1]["op_type"] == op_type]
            if theirs:
                own_taken += 1
                contra = check_types(specs, theirs)
                own_taken_contradicts += bool(contra)
                owner = predicted.get((gid, own), ("?", ""))[0]
                own_taken_list.append(
                    {
                        "graph": gid,
                        "kernel": full,
                        "dump_name": pred,
                        "own_name_files_belong_to": owner,
                        "contradicts_declared_type": contra[:2],
                    }
                )
    n_files = sum(len(v) for v in files.values())
    ok_files = sum(
        len([e for e in v if predicted.get(key, (None, None))[1] == e[1]["op_type"]])
        for key, v in files.items()
    )
    all_preds = defaultdict(set)
    for (gid, name), (_full, _t) in predicted.items():
        all_preds[name].add(gid)
    other_graph = sorted(
        f"graph {g}: {n}" for (g, n) in files if (g, n) not in predicted and n in all_preds
    )
    unexplained = sorted(f"graph {g}: {n}" for (g, n) in files if n not in all_preds)
    rep.update(
        {
            "kernels_with_files": with_files,
            "kernel_files": n_files,
            "kernel_files_predicted": ok_files,
            "files_in_other_graphs_folder": other_graph,
            "unexplained_names": unexplained,
            "output_files_type_checked": type_checked,
            "type_mismatches": type_bad,
            "renamed_kernels": renamed,
            "renamed_kernels_with_files": sum(
                1 for g, f, t, p, o, s in kernels if p != o and (g, p) in files
            ),
            "own_name_taken_by_another_kernel": own_taken,
            "own_name_taken_and_contradicts_type": own_taken_contradicts,
            "own_name_taken": own_taken_list,
            "non_virtual_kernels_without_files": no_files_real,
        }
    )
    if verbose:
        for gid, full, _op_type, pred, own, _ in kernels:
            if pred != own:
                print(f"  renamed g{gid}: {full} -> {pred}")
    return rep


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("roots", nargs="+")
    ap.add_argument("--json")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    reports = []
    ok = True
    for root in args.roots:
        for rank_dir in sorted(Path(root).glob("rank_*")):
            rep = check_rank(rank_dir, args.verbose)
            rep["dump"] = root
            reports.append(rep)
            hard = [m for m in rep["type_mismatches"] if "same element count" not in m]
            good = rep["kernel_files_predicted"] == rep["kernel_files"] and not hard
            ok &= good
            print(
                f"{root} {rep['rank']}: graphs {len(rep['graphs'])} (with files "
                f"{len(rep['graphs_with_files'])}), kernels {rep['kernels']} "
                f"({rep['virtual_kernels']} virtual), with files {rep['kernels_with_files']}; "
                f"kernel files predicted {rep['kernel_files_predicted']}/{rep['kernel_files']}; "
                f"output files type-checked {rep['output_files_type_checked']}, mismatches "
                f"{len(hard)} (+{len(rep['type_mismatches']) - len(hard)} same-size shape "
                f"only); renamed {rep['renamed_kernels']} "
                f"(with files {rep['renamed_kernels_with_files']}), own name on disk belongs to "
                f"another kernel {rep['own_name_taken_by_another_kernel']} (contradicting the "
                f"declared type {rep['own_name_taken_and_contradicts_type']}); "
                f"non-virtual kernels without files {len(rep['non_virtual_kernels_without_files'])}; "
                f"names only another graph predicts {len(rep['files_in_other_graphs_folder'])}; "
                f"unexplained names {len(rep['unexplained_names'])}"
            )
            for key in (
                "type_mismatches",
                "unexplained_names",
                "files_in_other_graphs_folder",
                "non_virtual_kernels_without_files",
            ):
                for line in rep[key][:20]:
                    print(f"    {key}: {line}")
            for item in rep["own_name_taken"]:
                print(
                    f"    own name taken: g{item['graph']} {item['kernel']} (dumped as "
                    f"{item['dump_name']}); its own name's files belong to "
                    f"{item['own_name_files_belong_to']}; {item['contradicts_declared_type'] or 'same type'}"
                )
    if args.json:
        Path(args.json).write_text(json.dumps(reports, indent=1) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
