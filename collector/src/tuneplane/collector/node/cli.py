"""``tuneplane-node``: the node agent of an execution host.

    tuneplane-node enroll --control HOST:8443 --ca-file CA --token-file F --state-dir DIR
    tuneplane-node run --state-dir DIR --work-root WORK --run-as USER [--run-as USER ...]

``enroll`` trades a one-time enrollment token for this node's credential (kept in
DIR/node.json, 0600). ``run`` beats to Node control and runs each launch it is given:
it takes a run-as USER of its own, verifies the collector artifact and the run's
integration artifact, checks the spool grant, writes the collector's configuration and
token file in DIR, makes the launch's working directory in WORK (USER's, 0700), starts the
training command there as USER with a collector beside it, rewrites the token file on
renewal, reports the launch's state, lets the collector drain at the end, then ends what
the launch left running as USER and gives USER back. SIGTERM stops the agent: training
commands get SIGTERM, collectors drain.

The run-as users are a pool (--run-as once per user): each running launch holds one user
alone, so no launch reads another's working directory or signals its processes; launches
beyond the pool wait in order for a free user, reported waiting with the reason (control
lists them delivered). Isolation is the default, so a single --run-as USER runs one launch
at a time: one tenant's training must never read, stop or change another's.
--share-run-as lets launches run at once as the same users, as all did before pools: only
where every launch of the node is one tenant's.

The agent runs as root (it switches to USER for training) and DIR is private to it: USER
reads none of the node credential, workload tokens, trust bundle, spools or collector
files. It refuses to run training as its own user unless given --allow-same-user.
"""

from __future__ import annotations

import argparse
import logging
import signal
import socket
import sys
from pathlib import Path

import grpc

from tuneplane.collector.node import agent, client
from tuneplane.collector.node.host import HostError, open_host
from tuneplane.collector.node.pool import UserPool
from tuneplane.collector.node.runas import RunAsError, resolve_pool
from tuneplane.collector.spoolroot import SpoolPlaceError, make_private


def cmd_enroll(args: argparse.Namespace) -> int:
    try:
        make_private(args.state_dir)
        token = args.token_file.read_text().strip()
        state = client.enroll(args.control, args.ca_file, token, socket.gethostname(),
                              args.server_name or "")
    except (OSError, SpoolPlaceError) as exc:
        print(f"tuneplane-node enroll: {exc}", file=sys.stderr)
        return 2
    except grpc.RpcError as exc:
        print(f"tuneplane-node enroll: refused by {args.control}: {exc.details()}",
              file=sys.stderr)
        return 1
    state.save(args.state_dir)
    print(f"enrolled as {state.node_id}; credential in {args.state_dir / client.STATE_FILE}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.loglevel.upper(),
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        users = resolve_pool(args.run_as or [None], allow_same_user=args.allow_same_user)
        host = open_host(args.state_dir, args.work_root,
                         UserPool(users, shared=args.share_run_as))
    except (RunAsError, HostError, OSError) as exc:
        print(f"tuneplane-node run: {exc}", file=sys.stderr)
        return 2
    logging.getLogger("tuneplane.node").info(
        "training runs as %s, %s", ", ".join(user.name for user in users),
        "shared by launches (--share-run-as)" if args.share_run_as else
        f"one launch per user: at most {len(users)} at once")
    node = agent.load(host)
    signal.signal(signal.SIGTERM, lambda *_: node.stopping.set())
    signal.signal(signal.SIGINT, lambda *_: node.stopping.set())
    node.run(exit_after=args.exit_after)
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tuneplane-node", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    e = sub.add_parser("enroll", help="enroll this node with a one-time enrollment token")
    e.add_argument("--control", required=True, help="Node control address host:8443")
    e.add_argument("--ca-file", type=Path, required=True,
                   help="CA that signs the gateway certificate (`tuneplane-admin gateway-ca`)")
    e.add_argument("--token-file", type=Path, required=True,
                   help="file holding the one-time enrollment token")
    e.add_argument("--server-name", help="TLS name to verify when it differs from --control")
    e.add_argument("--state-dir", type=Path, required=True,
                   help="private directory for the node credential and launches")
    e.set_defaults(func=cmd_enroll)
    r = sub.add_parser("run", help="beat to Node control and run the launches it assigns")
    r.add_argument("--state-dir", type=Path, required=True, help="as given to enroll")
    r.add_argument("--work-root", type=Path, required=True,
                   help="where each launch's working directory is made (WORK/<launch>), "
                        "outside the state directory; made 0711 when missing")
    r.add_argument("--run-as", metavar="USER", action="append",
                   help="an unprivileged user training commands run as; repeat it for a pool "
                        "(--run-as train-1 --run-as train-2). Each running launch holds a "
                        "user of its own, which must run nothing else on this host: what "
                        "runs as it when its launch ends is killed. Launches beyond the "
                        "pool wait for a free user (default: the agent's own user, refused "
                        "without --allow-same-user)")
    r.add_argument("--share-run-as", action="store_true",
                   help="let launches run at once as one user (the least busy of the pool) "
                        "instead of waiting for a user of their own: they can then read each "
                        "other's working directories and signal each other's processes, so "
                        "only where every launch of the node is one tenant's")
    r.add_argument("--allow-same-user", action="store_true",
                   help="let training run as the agent's own user, which can read the node "
                        "credential and workload tokens: a single-user workstation only")
    r.add_argument("--exit-after", type=int, metavar="N",
                   help="exit once N launches have been taken and all have ended")
    r.add_argument("--loglevel", default="INFO")
    r.set_defaults(func=cmd_run)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
