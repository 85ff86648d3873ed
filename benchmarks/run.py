"""Run one of the MAPTree paper's experiments: ``python -m benchmarks.run EXPERIMENT``.

Experiments (figure numbers of the MAPTree paper):

* ``speed``     (fig4, fig7)   log posterior against time: MAPTree, SMC, MCMC, 16 CP4IM datasets;
* ``cv``        (fig5, fig11)  stratified 10-fold accuracy, test log-likelihood and size against
                               CART, DL8.5, GOSDT and STreeD;
* ``synthetic`` (fig6, fig8-10) test accuracy on data from random trees, sizes 100-1000, noise 0-0.25;
* ``prior``     (fig12)        sensitivity to the 7 (alpha, beta) prior settings.

Finished jobs are logged as they complete, so an interrupted run resumes where it stopped.
Results: ``benchmarks/results/<experiment>[_quick].{csv,png,md}``.
"""

from __future__ import annotations

import argparse
import sys

from .engine import ALIASES, EXPERIMENTS, run_experiment


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.run",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    parser.add_argument("experiment", choices=EXPERIMENTS + tuple(sorted(ALIASES)), metavar="EXPERIMENT",
                        help=f"one of {', '.join(EXPERIMENTS)} (or a figure alias such as fig4)")
    parser.add_argument("--quick", action="store_true", help="the CI-sized grid (a few minutes)")
    parser.add_argument("--n-jobs", type=int, default=1, metavar="N", help="local worker processes (default 1)")
    parser.add_argument("--dask", metavar="ADDRESS", help="run the jobs on this dask.distributed scheduler")
    parser.add_argument("--out", metavar="DIR", help="result directory (default benchmarks/results)")
    parser.add_argument("--fresh", action="store_true", help="discard finished jobs instead of resuming")
    parser.add_argument("--summarize-only", action="store_true", help="only rewrite CSV, PNG and Markdown")
    parser.add_argument("--max-jobs", type=int, metavar="K", help="run at most K of the missing jobs")
    args = parser.parse_args(argv)
    if args.n_jobs < 1:
        parser.error(f"--n-jobs must be >= 1; got {args.n_jobs}")
    if args.max_jobs is not None and args.max_jobs < 0:
        parser.error(f"--max-jobs must be >= 0; got {args.max_jobs}")
    run_experiment(args.experiment, quick=args.quick, n_jobs=args.n_jobs, dask=args.dask, out_dir=args.out,
                   fresh=args.fresh, summarize_only=args.summarize_only, max_jobs=args.max_jobs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
