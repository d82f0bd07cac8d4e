"""Path and query parameter types the routers share."""

from typing import Annotated

from fastapi import Path, Query

AttemptNo = Annotated[int, Path(ge=1, le=2**31 - 1)]
Step = Annotated[int | None, Query(ge=-(2**63), le=2**63 - 1)]
