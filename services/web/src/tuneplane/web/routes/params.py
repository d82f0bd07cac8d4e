"""Path and query parameter types the routers share."""

from typing import Annotated

from fastapi import Path, Query

from tuneplane.telemetry.v1.limits import MAX_RUN_PATH_BYTES

AttemptNo = Annotated[int, Path(ge=1, le=2**31 - 1)]
#: How many rows of an attempt's listing (members, late batches) one answer holds.
ListLimit = Annotated[int, Query(ge=1, le=10_000)]
Step = Annotated[int | None, Query(ge=-(2**63), le=2**63 - 1)]
RunPath = Annotated[str, Query(max_length=MAX_RUN_PATH_BYTES,
                               description="the series' TensorBoard run: its event files' "
                                           "directory below the log directory ('' for the "
                                           "log directory itself)")]
RunPathFilter = Annotated[str | None, Query(max_length=MAX_RUN_PATH_BYTES,
                                            description="only records of this TensorBoard "
                                                        "run ('' for the log directory)")]
