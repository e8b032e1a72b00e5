"""``python -m bench``: run benchmark suites against the real local control plane.

python -m bench run --suite smoke                   # CI: a few nodes, every peer, ~2 min
python -m bench run --suite throughput|latency|contention|scale|all [--peers ours,reference]
python -m bench report                              # rewrite bench/RESULTS.md and plots
python -m bench build                               # build the peers' binaries only
python -m bench soak --minutes 30 --faults all --seed 1  # gang churn under faults (not in CI)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.peers import ALL_PEERS, OPTIONAL_PEERS, PEERS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a suite")
    run.add_argument(
        "--suite",
        required=True,
        help="smoke, throughput, latency, contention, scale or all; several comma-separated; "
        "also queues (throughput without and with queues, interleaved), fairness and "
        "fairness-late (the heavy tenant's backlog first), fairness-equal (equal backlogs), "
        "preemption (high gangs into a cluster full of low ones, --rounds times), "
        "preemption-overhead (ours with preemption off and on, interleaved), "
        "startup (exec to first Binding with a backlog, per phase; --peers ours@REV,ours "
        "for before/after, interleaved, --rounds times), "
        "before-after (throughput of gangs of 8 and 64, and contention; --peers ours@REV,ours, "
        "interleaved, --rounds times), "
        "topology (contention on racks, every gang required in one rack), "
        "dra (contention for GPUs claimed through DRA; ours, default and native)",
    )
    run.add_argument(
        "--rounds",
        type=int,
        default=None,
        help="rounds of the queues, preemption, preemption-overhead, startup and "
        "before-after suites (default 3); of throughput, contention and topology (default 1), "
        "interleaved: each round runs every workload, the peers' order alternating",
    )
    run.add_argument(
        "--pods",
        type=int,
        default=None,
        help="pods of the throughput and scale suites (default 10,000 at QPS 1000 and full "
        "scale, else 2,048)",
    )
    run.add_argument(
        "--time-limit",
        type=float,
        default=None,
        help="scale suite: seconds each trial waits for its bindings (default 900, or one per "
        "50 pods); a trial stopped so reports what it bound",
    )
    run.add_argument(
        "--queues", type=int, default=10, help="queues of the queues suite (default 10)"
    )
    run.add_argument(
        "--peers",
        default=",".join(ALL_PEERS),
        help=f"comma-separated, from {','.join((*PEERS, *OPTIONAL_PEERS))}, or ours@REV "
        "(ours at a git revision), or ours-bindN (ours with --bind-concurrency=N) "
        f"(default: {','.join(ALL_PEERS)})",
    )
    run.add_argument(
        "--regimes",
        default=None,
        help="client QPS/burst regimes: default (50/100), high (1000/2000); "
        "default: both (smoke: high)",
    )
    run.add_argument(
        "--scale",
        choices=["full", "small"],
        default="full",
        help="full: 1,000 nodes and 10,000 pods as the issue asks; small: a "
        "100-node version for a quick look",
    )
    run.add_argument(
        "--gang-sizes",
        default="1,8,64,512",
        help="gang sizes of the throughput workload, and the scale workload's mix (an equal "
        "share of its pods per size; default 1,8,64,512)",
    )
    run.add_argument(
        "--scale-nodes",
        default="",
        help="node counts of the scale suite (default 100,1000,5000; small: 100,1000)",
    )
    run.add_argument(
        "--out",
        type=Path,
        default=None,
        help="where the JSON goes (default bench/results; smoke: a temp dir)",
    )
    run.add_argument("--no-report", action="store_true", help="do not rewrite RESULTS.md")
    run.add_argument(
        "--keep-failed-logs", type=Path, default=None, help="copy the logs of failed trials here"
    )
    run.add_argument(
        "--keep-logs",
        type=Path,
        default=None,
        metavar="DIR",
        help="copy every trial's logs here, with ours at info and the trial's pod watch "
        "(pod-events.jsonl) and pod records (pods.json): to read a trial after the fact",
    )
    run.add_argument(
        "--profile",
        type=Path,
        default=None,
        metavar="DIR",
        help="record ours with py-spy during throughput trials (collapsed stacks "
        "in DIR; perturbs the figures: profile in a separate run)",
    )
    soak = commands.add_parser("soak", help="gang churn under faults, invariants checked")
    soak.add_argument(
        "--minutes", type=float, default=30.0, help="how long faults and arrivals go on"
    )
    soak.add_argument(
        "--faults", default="all", help="all, or comma-separated kinds (bench/README.md)"
    )
    soak.add_argument("--seed", type=int, default=1, help="every random choice comes from it")
    soak.add_argument("--nodes", type=int, default=200, help="KWOK nodes (default 200)")
    soak.add_argument("--out", type=Path, default=None, help="default bench/results/soak")
    commands.add_parser("report", help="rewrite bench/RESULTS.md and plots from bench/results")
    commands.add_parser("build", help="build or find the peers' binaries")
    args = parser.parse_args(argv)

    from e2e.processes import interrupt_on_sigterm

    interrupt_on_sigterm()
    if args.command == "build":
        from bench import build

        return build.main()
    if args.command == "soak":
        from bench import runner
        from bench import soak as soak_mod

        try:
            faults = soak_mod.parse_faults(args.faults)
        except ValueError as error:
            parser.error(str(error))
        options = soak_mod.SoakOptions(
            minutes=args.minutes,
            faults=faults,
            seed=args.seed,
            nodes=args.nodes,
            out=args.out or soak_mod.SOAK_DIR,
        )
        try:
            out, record = soak_mod.run_soak(options, command=runner.command_line())
        except KeyboardInterrupt:
            print("interrupted; every process this soak started was stopped", file=sys.stderr)
            return 130
        print("\n".join(soak_mod.summary_lines(record)))
        print(f"results: {out}")
        return 1 if record.violations else 0
    if args.command == "report":
        from bench import report

        print(report.write_report())
        return 0

    import tempfile

    from bench import runner
    from bench.peers import make_peer
    from bench.progress import Progress

    peers = [p.strip() for p in args.peers.split(",") if p.strip()]
    for peer in peers:
        variant = peer.startswith(("ours@", "ours-bind"))
        if peer not in PEERS and peer not in OPTIONAL_PEERS and not variant:
            parser.error(f"unknown peer {peer!r}")
        make_peer(peer)  # one the running Kubernetes release cannot run stops here
    regimes = (args.regimes or ("high" if args.suite == "smoke" else "high,default")).split(",")
    sizes = tuple(int(x) for x in args.gang_sizes.split(","))
    scale_nodes = tuple(int(x) for x in args.scale_nodes.split(",") if x.strip())
    names = [n.strip() for n in args.suite.split(",") if n.strip()]
    known = {
        "smoke",
        "throughput",
        "latency",
        "contention",
        "scale",
        "all",
        "queues",
        "fairness",
        "fairness-late",
        "fairness-equal",
        "preemption",
        "preemption-overhead",
        "startup",
        "before-after",
        "topology",
        "dra",
        "idle",
        "kopf",
    }
    if not names or not set(names) <= known:
        parser.error(f"--suite: choose from {', '.join(sorted(known))} (comma-separated)")
    suite = runner.Suite("+".join(names))
    for name in names:
        suite.trials += runner.build_suite(
            name,
            peers,
            regimes,
            args.scale,
            sizes,
            scale_nodes,
            args.rounds,
            args.queues,
            args.pods,
            args.time_limit,
        ).trials
    out = args.out or (
        Path(tempfile.mkdtemp(prefix="bench-smoke-"))
        if args.suite == "smoke"
        else runner.RESULTS_DIR
    )
    progress = Progress()
    try:
        path = runner.run_suite(
            suite,
            command=runner.command_line(),
            out_dir=out,
            keep_logs=args.keep_failed_logs,
            keep_all_logs=args.keep_logs,
            progress=progress,
            profile_dir=args.profile,
        )
    except KeyboardInterrupt:
        progress.log("interrupted; every process this run started was stopped")
        return 130
    progress.log(f"results: {path}")
    import json

    document = json.loads(path.read_text())
    failed = [t for t in document["trials"] if not t["ok"]]
    if args.suite != "smoke" and not args.no_report and args.out is None:
        from bench import report

        progress.log(f"report: {report.write_report()}")
    if failed:
        progress.log(f"{len(failed)} trial(s) FAILED their outcome check; no figure for them")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
