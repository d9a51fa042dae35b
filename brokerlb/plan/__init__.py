"""Admin plans: bundle operations (split, merge, unload) as a JSON file, and applying them.

The pipeline's ``recommend`` job writes a :class:`Plan`; ``brokerlb plan apply PLAN --url ...``
(:func:`apply_plan`) sends it to a running cluster's admin REST API. The format is documented
in ``docs/plan-format.md``. :mod:`brokerlb.plan.format` is pure; :mod:`brokerlb.plan.apply`
imports httpx only when called.
"""

from brokerlb.plan.format import PLAN_KIND, PLAN_VERSION, MergeOp, Plan, PlanOp, SplitOp, UnloadOp

__all__ = [
    "PLAN_KIND",
    "PLAN_VERSION",
    "MergeOp",
    "Plan",
    "PlanOp",
    "SplitOp",
    "UnloadOp",
    "apply_plan",
    "ApplyReport",
    "OpResult",
]


def __getattr__(name: str):  # type: ignore[no-untyped-def]
    if name in ("apply_plan", "ApplyReport", "OpResult"):
        from brokerlb.plan import apply

        return getattr(apply, name)
    raise AttributeError(name)
