"""Tuneplane's Python client (``tuneplane-client``): runs, their attempts and series, and
every stored point of a series as an Arrow table or a pandas or polars frame.

    from tuneplane.client import Client
    client = Client()                      # TUNEPLANE_URL, TUNEPLANE_TOKEN
    for run in client.runs(project="vision", state="finished"):
        print(run.run_id, run.points)
    loss = client.run("resnet-7").scalars("loss")          # step, wall_time, value
"""

from tuneplane.client.client import Client, ClientError, RunRow
from tuneplane.client.run import Run

__all__ = ["Client", "ClientError", "Run", "RunRow"]
