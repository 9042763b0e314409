"""Forgetting: an event, a fact, everything a sender said, or everything about an entity, removed from
every store and every file under the data directory, in one transaction, with a deletion log.

`forget(stores, Target("fact", fact_id), requested_by=..., reason=...)`; `preview` says what would go.
plan.py decides what a target reaches; ledger.py, facts.py, episodes.py, derived.py, identity_rows.py
and vectors.py delete per store; scrub.py makes sure no bytes are left; run.py puts them in order;
requests.py files a forget for Dagster's forget_job, whose run config then holds an opaque id only.
"""

from nexus_memory.lifecycle.forget.plan import TARGET_KINDS, ForgetError, ForgetPlan, Target, make_plan
from nexus_memory.lifecycle.forget.requests import file_request, forget_request
from nexus_memory.lifecycle.forget.run import ForgetResult, finish_scrub, forget, forget_or_preview, preview

__all__ = [
    "TARGET_KINDS",
    "ForgetError",
    "ForgetPlan",
    "ForgetResult",
    "Target",
    "file_request",
    "finish_scrub",
    "forget",
    "forget_or_preview",
    "forget_request",
    "make_plan",
    "preview",
]
