"""`tributary allreduce`: INC through the switches vs host baselines, on the same emulated WAN."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from topo.options import add_wan_arguments, log, require_root


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "allreduce",
        help="run an allreduce through the switches (INC) and a host baseline on the WAN, and check them",
        description="Bring up the WAN with the given sites, install an aggregation tree per tenant over "
        "P4Runtime, run the allreduce on every worker through the switches, then the same allreduce with "
        "host-based baselines (ring, hierarchical, OpenMPI, parameter server); check every worker's result against the exact "
        "sum and print a summary (one JSON line with --json). --loss is random loss on every WAN link (a fraction). "
        "Needs root.",
        epilog="example:\n  sudo tributary allreduce --sites TYO,NYC,LON --workers-per-site 2 --elements 262144 "
        "--loss 0.02 --mode int32 --compare ring,hierarchical --json\n"
        "  sudo tributary allreduce --workers-per-site 1 --access-rate 2 --elements 131072 "
        "--compare ring,hierarchical,mpi,ps --json   # access-limited sites\n"
        "  sudo tributary allreduce --sites TYO,NYC,LON --workers-per-site 2 --rate 50 --elements 65536 "
        "--loss 0.02 --tenants 5 --compare none --json   # four tenants fill the switches, the fifth runs on "
        "the host path\n"
        "  sudo tributary allreduce --sites TYO,NYC,LON --workers-per-site 2 --elements 262144 --loss 0.02 "
        "--mode sparse --dtype float32 --density 0.01 --compare none --json   # top-k float32 gradients\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_wan_arguments(p)
    p.add_argument(
        "--elements",
        type=int,
        default=None,
        help="vector length per worker (default 65536, or the --inputs file's)",
    )
    p.add_argument(
        "--inputs",
        type=Path,
        default=None,
        metavar="FILE",
        help="your own vectors instead of generated ones: a .npy of shape (workers, elements), row r for "
        "rank r (the sites in order, each site's workers in order), or a .npz with one 1-D array per rank "
        "(rank0, rank1, ... or numpy.savez's arr_0, ...). Checked against --mode before the WAN starts "
        "(int32 / sparse: int32 values; int8 / int4: the narrow range; float32 / mxint8 / sparse float32: "
        "float32, NaN and inf allowed) and copied into the run directory; every tenant and baseline sums "
        "the same rows, and the results are checked against their exact sum",
    )
    p.add_argument(
        "--mode",
        choices=("int32", "float32", "int8", "int4", "mxint8", "sparse"),
        default="int32",
        help="int32: exact; float32: fixed point with per-block exponents; int8 / int4: exact sums of "
        "narrow integers, packed 4 / 8 to a word on the host link; mxint8: OCP MX blocks of 32 int8 under "
        "an agreed E8M0 scale; sparse: block-sparse vectors (--density, --dtype), only the blocks someone "
        "holds travel with values (docs/obstacles.md; default int32)",
    )
    p.add_argument(
        "--values-per-packet",
        choices=("auto", "64", "256"),
        default="auto",
        help="int32 and float32 sums: 64 values to a packet (322-byte frames), or 256 (one 1090-byte wide "
        "frame for four chunks: a quarter of the packets for every worker and switch, 15 %% fewer bytes); "
        "auto takes 256 where the workers' packets at the links' rate would exceed the machine's packet "
        'budget, so that the CPU does not set the run\'s pace (docs/protocol.md, "Wide int32"; default auto)',
    )
    p.add_argument(
        "--dtype",
        choices=SPARSE_DTYPES,
        default=None,
        help="sparse mode's element type: int32 (exact sums) or float32 (the float32 mode's block fixed "
        "point over the union's blocks only: one exponent per block agreed among the workers that hold it, "
        "error within the stated bound, inf and NaN as IEEE addition); the other modes name their type "
        "(default int32)",
    )
    p.add_argument(
        "--density",
        type=float,
        default=None,
        metavar="D",
        help="sparse mode: the fraction of 64-value blocks each worker holds (chosen at random, "
        "independently per worker); it is also the job's declared top-k fraction, from which the "
        "workers decide whether the sparse path can pay or the blocks go dense (default 0.01; with "
        "--inputs, the largest fraction any rank's vector holds)",
    )
    p.add_argument(
        "--compare",
        type=_baselines,
        default=["ring"],
        help="host baselines to run on the same WAN, comma-separated from ring (flat ring of all "
        "workers), hierarchical (site leaders exchange directly, as NCCL/Horovod across nodes), mpi "
        "(OpenMPI's MPI_Allreduce with its own algorithm choice, via mpi4py), ps (parameter server), "
        "or none (default ring)",
    )
    p.add_argument(
        "--tenants",
        type=int,
        default=1,
        help="concurrent jobs over the same workers, admitted one after another as the REST service admits "
        "them: each asks for --slots; one that finds the cells taken gets fewer slots (halved down to "
        "--min-slots), and below that the host path (--fallback); all run at once (default 1)",
    )
    p.add_argument(
        "--slots",
        type=int,
        default=0,
        help="slots each tenant asks for per switch, which bound its window (default: one per chunk of the "
        "vector, up to a switch's 4096)",
    )
    p.add_argument(
        "--min-slots",
        type=int,
        default=0,
        help="the least window a tenant accepts when earlier tenants hold the cells (default: a quarter of "
        "what it asks for)",
    )
    p.add_argument(
        "--fallback",
        choices=("host", "none"),
        default="host",
        help="a tenant that cannot get even --min-slots: host runs the hierarchical host allreduce on the "
        "same workers, none refuses it (default host)",
    )
    p.add_argument(
        "--secure",
        action="store_true",
        help="secure aggregation: every worker masks its values with pairwise masks agreed by X25519 "
        "key exchange, which cancel in the sum, so no switch sees a worker's data, nor, on the host path "
        "(a tenant admission sends there, and the host baselines), any other host (docs/obstacles.md)",
    )
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run INC (and each baseline) N times on the same inputs and report whether every result of "
        "every repetition is bit-identical (reproducibility under loss and reordering; default 1)",
    )
    p.add_argument(
        "--mpi-mca",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an OpenMPI MCA parameter for the mpi baseline (repeatable), e.g. "
        "coll_tuned_use_dynamic_rules=1 with coll_tuned_allreduce_algorithm=4 to force its ring; "
        "default: the library's own choice",
    )
    p.add_argument("--seed", type=int, default=1, help="seed of the generated inputs")
    p.add_argument(
        "--stall-timeout",
        type=float,
        default=30.0,
        help="a worker gives up after this many seconds without any result (default 30)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON line")
    p.set_defaults(func=cmd_allreduce)


BASELINES = ("ring", "hierarchical", "mpi", "ps")
SPARSE_DTYPES = ("int32", "float32")  # --mode sparse --dtype D runs the worker's mode SPARSE_MODE[D]
SPARSE_MODE = {"int32": "sparse", "float32": "sparse-float32"}


def _baselines(text: str) -> list[str]:
    names = [t.strip() for t in text.split(",") if t.strip()]
    if names == ["none"]:
        return []
    bad = [n for n in names if n not in BASELINES]
    if bad or not names or len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(
            f"expected a comma-separated list of {', '.join(BASELINES)} (each once) or none, got {text!r}"
        )
    return names


def _staged_inputs(args: argparse.Namespace, mode: str) -> np.ndarray:
    """The --inputs file checked against the mode and the WAN's workers, before anything starts."""
    from edge import inputs as user_inputs
    from topo.options import wan_from_args

    wan = wan_from_args(args)
    workers = len(wan.sites) * wan.workers_per_site
    try:
        rows = user_inputs.prepare(user_inputs.read_rows(args.inputs), mode, workers, str(args.inputs))
    except user_inputs.InputError as exc:
        raise SystemExit(f"tributary allreduce: --inputs {exc}") from None
    if args.elements is not None and args.elements != rows.shape[1]:
        raise SystemExit(
            f"tributary allreduce: --elements {args.elements}, but the --inputs vectors hold {rows.shape[1]} "
            "values each (leave --elements out: the file sets it)"
        )
    return rows


def _values_per_packet(args: argparse.Namespace, mode: str) -> int:
    """--values-per-packet as a number: auto decides from the run's workers and the links' rate
    (topo.allreduce_run.auto_values_per_packet); 256 is refused where the sums cannot travel wide."""
    from edge.formats import WIDE_MODES
    from topo.allreduce_run import auto_values_per_packet
    from topo.options import wan_from_args

    if args.values_per_packet == "auto":
        wan = wan_from_args(args)
        workers = len(wan.sites) * wan.workers_per_site
        return auto_values_per_packet(mode, args.secure, workers, wan, args.elements)
    wanted = int(args.values_per_packet)
    if wanted != 64 and (mode not in WIDE_MODES or args.secure):
        raise SystemExit(
            f"tributary allreduce: --values-per-packet {wanted} carries int32 and float32 sums only, unmasked "
            f"(--mode {args.mode}{' --secure' if args.secure else ''} sends 64 values to a packet: "
            "packed formats have their own wide frames, and masks cancel in 64-lane rows)"
        )
    return wanted


def cmd_allreduce(args: argparse.Namespace) -> int:
    if args.density is None:
        args.density = 0.01
        density_given = False
    else:
        density_given = True
    if not 0.0 <= args.density <= 1.0:
        raise SystemExit(
            f"tributary allreduce: --density is a fraction of the blocks, 0..1, got {args.density:g}"
        )
    if args.dtype is not None and args.mode != "sparse":
        raise SystemExit(
            f"tributary allreduce: --dtype is the element type of --mode sparse; --mode {args.mode} names "
            "its own type (for block-sparse float32: --mode sparse --dtype float32)"
        )
    if density_given and args.mode != "sparse":
        raise SystemExit(
            f"tributary allreduce: --density is the block fraction of --mode sparse; --mode {args.mode} "
            "sends every value (for block-sparse vectors: --mode sparse --density D)"
        )
    if args.mode == "sparse" and args.secure:
        raise SystemExit(
            "tributary allreduce: --mode sparse cannot be --secure: the masks make every block dense "
            "(a masked zero is not zero), so nothing would be sparse"
        )
    dtype = args.dtype or "int32"
    mode = SPARSE_MODE[dtype] if args.mode == "sparse" else args.mode
    rows = _staged_inputs(args, mode) if args.inputs is not None else None
    if rows is not None:
        args.elements = int(rows.shape[1])
    elif args.elements is None:
        args.elements = 65536
    if args.elements < 1 or args.tenants < 1 or args.slots < 0 or not 1 <= args.repeat <= 100:
        raise SystemExit(
            "tributary allreduce: --elements and --tenants must be positive, --slots not negative, "
            "--repeat in 1..100"
        )
    if args.slots > 4096 or args.min_slots < 0 or (args.slots and args.min_slots > args.slots):
        raise SystemExit(
            "tributary allreduce: --slots at most 4096 (a switch's pool), --min-slots not negative and at "
            "most --slots"
        )
    values_per_packet = _values_per_packet(args, mode)
    # every argument is checked before asking for root, so a mistake is reported as itself
    if not require_root("allreduce"):
        return 1
    from topo.allreduce_run import AllreduceSpec, run_baseline, run_inc
    from topo.session import running_wan

    spec = AllreduceSpec(
        args.elements, mode, args.tenants, args.slots, args.seed, args.stall_timeout, args.secure
    )
    spec.values_per_packet = values_per_packet  # before slots(): wide packets ask for multiples of 4
    spec.min_slots, spec.fallback = min(args.min_slots, spec.slots()), args.fallback
    spec.density = args.density
    for item in args.mpi_mca:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"tributary allreduce: --mpi-mca wants KEY=VALUE, got {item!r}")
        spec.mpi_mca[key] = value
    from edge import inputs as user_inputs

    args.staged_inputs = None
    with running_wan(args, label="allreduce") as running:
        if rows is not None:
            staged, _ = user_inputs.stage_rows(rows, mode, rows.shape[0], running.run_dir)
            spec.inputs = args.staged_inputs = str(staged)
            if args.mode == "sparse" and not density_given:
                spec.density = user_inputs.block_density(staged)
            log(
                f"inputs: {args.inputs} ({rows.shape[0]} workers x {rows.shape[1]} {rows.dtype}), staged as {staged}"
            )
        access = running.network.wan.access_rate_mbit
        incs, runs = [], {name: [] for name in args.compare}
        for i in range(args.repeat):
            if args.repeat > 1:
                log(f"repetition {i + 1} of {args.repeat}")
            incs.append(run_inc(running, spec, log))
            for name in args.compare:
                runs[name].append(run_baseline(running, spec, name, log))
    inc = incs[-1]
    bases = [runs[name][-1] for name in args.compare]
    summary: dict[str, object] = {
        "mode": args.mode,
        **({"dtype": dtype} if args.mode == "sparse" else {}),
        "values_per_packet": values_per_packet,
        "secure": args.secure,
        **({"inputs": str(args.inputs)} if args.inputs is not None else {}),
        "wan_model": f"access-limited ({access:g} Mbit/s per worker)" if access else "full mesh",
        # every tenant that ran (a refused one, --fallback none, did not run)
        "exact": all(r.exact for r in inc if r.extra.get("path") != "refused"),
        "max_abs_error": max(r.max_abs_error for r in inc),
        "inc": inc[0].summary()
        if len(inc) == 1
        else {
            "tenants": [r.summary() for r in inc],
            "goodput_elems_per_s": round(sum(r.goodput for r in inc), 1),
            "seconds": round(max(r.seconds for r in inc), 4),
            "paths": {p: sum(r.extra.get("path") == p for r in inc) for p in ("switch", "host", "refused")},
        },
    }
    if args.repeat > 1:
        summary["repeat"] = args.repeat
        summary["bit_identical"] = _identical([r for rep in incs for r in rep[:1]])
        summary["inc"]["seconds_each"] = [round(rep[0].seconds, 4) for rep in incs]  # type: ignore[index]
        # what each repetition cost (the keys at the top are the last one's): bytes and retransmissions
        summary["inc"]["wan_bytes_each"] = [(rep[0].extra.get("bytes") or {}).get("wan") for rep in incs]  # type: ignore[index]
        summary["inc"]["retransmissions_each"] = [int(rep[0].stats.get("retransmissions", 0)) for rep in incs]  # type: ignore[index]
        summary["exact"] = all(r.exact for rep in incs for r in rep if r.extra.get("path") != "refused")
    summary.update(_obstacle_keys(inc, incs, args))
    inc_goodput = sum(r.goodput for r in inc)
    for base in bases:
        summary[base.name] = base.summary()
        if args.repeat > 1:
            summary[base.name]["bit_identical"] = _identical(runs[base.name])  # type: ignore[index]
    if bases:
        first = bases[0]
        summary["ratio"] = round(inc_goodput / first.goodput, 3) if first.goodput else None
        # what that ratio would be if both ran at their lower bounds (topo/bounds.py)
        summary["bound_ratio"] = round(first.bound_s / inc[0].bound_s, 3) if inc[0].bound_s else None
        exact = [b for b in bases if b.exact] or bases
        best = max(exact, key=lambda b: b.goodput)
        summary["best_host"] = best.name
        summary["ratio_vs_best_host"] = round(inc_goodput / best.goodput, 3) if best.goodput else None
        summary.update(_against_bounds(inc[0], best, spec, summary["ratio_vs_best_host"]))
    if args.json:
        print(json.dumps(summary))
    else:
        print(json.dumps(summary, indent=2))
    ok = summary["exact"] and all(b.exact for rep in runs.values() for b in rep)
    return 0 if ok else 1


def _against_bounds(inc, best, spec, ratio: float | None) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """The bound ratio beside the measured one, and, where the run falls short of the goal (0.9 of the
    bound ratio), why (topo/shortfall.py)."""
    from edge.protocol import INC_LANES
    from topo import shortfall

    out: dict[str, object] = {"bound_ratio_vs_best_host": shortfall.bound_ratio(inc, best)}
    target = out["bound_ratio_vs_best_host"]
    if ratio is None or not isinstance(target, float):
        return out
    out["goal_met"] = ratio >= shortfall.GOAL * target
    if not out["goal_met"]:
        out["shortfall"] = shortfall.analyse(inc, best, -(-spec.elements // INC_LANES))
    return out


def _obstacle_keys(inc: list, incs: list, args: argparse.Namespace) -> dict[str, object]:  # type: ignore[type-arg]
    """The keys every mode reports (docs/obstacles.md): error bound, bytes per link class (measured at
    the switches' interfaces, all tenants), seconds, retransmissions, bit-identical results; for the
    narrow integer modes what narrowing the exact sums back to the narrow type would cost."""
    out: dict[str, object] = {
        "error_bound": max(r.bound for r in inc),
        "bytes": inc[0].extra.get("bytes"),
        "seconds": round(max(r.seconds for r in inc), 4),
        "retransmissions": sum(int(r.stats.get("retransmissions", 0)) for r in inc),
        # one run: every worker holds the same bits; with --repeat: every repetition too
        "bit_identical": _identical([rep[0] for rep in incs]),
    }
    if args.mode == "sparse":  # the path taken, the union, and the density leaving each level of the tree
        out["sparse"] = {
            **inc[0].extra.get("sparse", {}),
            "fill_in": inc[0].extra.get("fill_in"),
            "dense_wan_floor_bytes": inc[0].extra.get("dense_wan_floor_bytes"),
            "wan_fraction_of_dense_floor": inc[0].extra.get("wan_fraction_of_dense_floor"),
        }
    if args.mode == "int32" or (args.mode == "sparse" and args.dtype in (None, "int32")):
        # int32 sums are int32: where the exact sum leaves int32 it arrives wrapped, "exact" as int32 is
        from edge import formats
        from edge.runner import expected_sum
        from topo.options import wan_from_args

        wan = wan_from_args(args)
        ranks = list(range(len(wan.sites) * wan.workers_per_site))
        worker_mode = "sparse" if args.mode == "sparse" else "int32"
        wide = expected_sum(
            args.seed + 1, ranks, args.elements, worker_mode, args.density, inputs=args.staged_inputs
        )
        out["wrapped"] = formats.wrapped_sums(wide)
    if args.mode in ("int8", "int4"):
        from edge import lowprec
        from edge.runner import expected_sum

        hosts = len(inc[0].digests) or 1
        exact = expected_sum(
            args.seed + 1, list(range(hosts)), args.elements, args.mode, inputs=args.staged_inputs
        )
        out["narrowing"] = lowprec.narrowing_errors(exact, args.mode)
    return out


def _identical(results: list) -> bool:  # type: ignore[type-arg]
    """Every worker of every run holds the very same bits."""
    digests = {d for r in results for d in r.digests}
    return len(digests) == 1 and all(len(r.digests) == len(results[0].digests) for r in results)
