"""What a caller may view, as the SQL conditions every listing shares, so that a change to
the rule reaches each of them: a run of one of the caller's projects (an admin's set is
NULL: every project), neither the run deleted (a deletion of attempt 0) nor, where an
attempt is read, that attempt (a deletion counts until it is undone). Arguments are column
names and parameter placeholders of the statement, never user text."""

from __future__ import annotations


def in_projects(project: str, projects: str) -> str:
    """``project`` (a column) is one of ``projects`` (a ``text[]`` parameter, NULL: all)."""
    return f"({projects}::text[] IS NULL OR {project} = ANY({projects}::text[]))"


def deleted(run_id: str, attempts: str) -> str:
    """A deletion not undone of run ``run_id`` whose attempt is one of ``attempts`` (a SQL
    list: ``0`` is the whole run)."""
    return (f"EXISTS (SELECT 1 FROM deletions d WHERE d.run_id = {run_id} "
            f"AND d.attempt IN ({attempts}) AND d.undone_at IS NULL)")


def run_kept(run_id: str) -> str:
    """Run ``run_id`` is not deleted."""
    return f"NOT {deleted(run_id, '0')}"


def attempt_kept(run_id: str, attempt: str) -> str:
    """Attempt ``attempt`` of run ``run_id`` is not deleted (the run itself aside)."""
    return f"NOT {deleted(run_id, attempt)}"


def run_and_attempt_kept(run_id: str, attempt: str) -> str:
    """Neither run ``run_id`` nor its attempt ``attempt`` is deleted."""
    return f"NOT {deleted(run_id, f'0, {attempt}')}"
