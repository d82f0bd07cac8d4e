"""The control plane's typed errors: a family per resource, and a kind per outcome.

Every error is a family (``RunError``, ``LaunchError``, ...) and one kind: ``NotFound``
(what the request names is not there), ``Conflict`` (it does not fit the current state),
``NotYet`` (it will fit once what is under way shows, without the caller doing anything: ask
again) or ``Invalid`` (the request itself is malformed). Callers map kinds, never message text, to
their own answers (HTTP statuses, gRPC codes).
"""

from __future__ import annotations


class ControlPlaneError(ValueError):
    """A request the control plane refuses; the message says why."""


class NotFound(ControlPlaneError):
    """What the request names does not exist (or is not the caller's)."""


class Conflict(ControlPlaneError):
    """The request does not fit the current state of what it names."""


class NotYet(ControlPlaneError):
    """The request fits what is under way, which has not shown yet: the same request asked
    again later may pass."""


class Invalid(ControlPlaneError):
    """The request is malformed, whatever the state."""


class RunError(ControlPlaneError):
    """Runs and attempts."""


class RunNotFound(RunError, NotFound):
    pass


class AttemptNotFound(RunError, NotFound):
    pass


class RunExists(RunError, Conflict):
    pass


class AttemptStillRunning(RunError, Conflict):
    pass


class AttemptAlreadyEnded(RunError, Conflict):
    pass


class InvalidRun(RunError, Invalid):
    """A malformed run id or end state."""


class MappingFrozen(RunError, Conflict):
    """The attempt already has a different metric mapping frozen."""


class LaunchError(ControlPlaneError):
    """Launches on nodes."""


class InvalidLaunch(LaunchError, Invalid):
    """A launch request that cannot be carried out (command, members, node or run)."""


class LaunchNotAssigned(LaunchError, NotFound):
    """The launch is not one of the calling node's."""


class LaunchEnded(LaunchError, Conflict):
    pass


class JobStartRefused(LaunchError, Conflict):
    """A Slurm job's collector may not have credentials for this node and start (a ticket
    already spent, a job Slurm does not run, an attempt that has ended)."""


class JobStartEarly(LaunchError, NotYet):
    """The job's scheduler does not show the start running yet, while its collector (which
    runs in it) already asks: Kubernetes shows a pod's container running only once the
    kubelet has reported it."""


class EnrollmentError(ControlPlaneError):
    """Node enrollment."""


class EnrollmentRefused(EnrollmentError, Invalid):
    """A malformed node name, or an enrollment token that is unknown, used or expired."""


class NodeNotFound(EnrollmentError, NotFound):
    pass


class UserError(ControlPlaneError):
    """Users."""


class UserNotFound(UserError, NotFound):
    pass


class UserExists(UserError, Conflict):
    pass


class InvalidUserName(UserError, Invalid):
    pass


class ProjectError(ControlPlaneError):
    """Projects and the roles users hold in them."""


class ProjectNotFound(ProjectError, NotFound):
    pass


class ProjectExists(ProjectError, Conflict):
    pass


class InvalidProject(ProjectError, Invalid):
    pass


class TokenNotFound(UserError, NotFound):
    pass


class InvalidToken(UserError, Invalid):
    pass


class SignInRefused(UserError, Invalid):
    """The identity provider's user may not sign in here (disabled; a name not taken)."""
