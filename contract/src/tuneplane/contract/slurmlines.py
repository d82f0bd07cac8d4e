"""What a Slurm job's collector says on its standard output, which the job script control
writes reads (``tuneplane.control.slurm.jobscript``): ``READY attempt=N node=K members=...``
once it holds its credentials, or ``REFUSED <why>`` when it will not run on the node."""

from __future__ import annotations

READY = "tuneplane-collector: ready"
REFUSED = "tuneplane-collector: refused: "
