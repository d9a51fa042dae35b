"""``brokerlb admin tenants``: pulsar-admin's tenant verbs.

::

    brokerlb admin tenants list
    brokerlb admin tenants get acme
    brokerlb admin tenants create acme --allowed-clusters standalone [--admin-roles ops,dev]
    brokerlb admin tenants update acme --allowed-clusters standalone --admin-roles ops
    brokerlb admin tenants delete acme [--force]
"""

from __future__ import annotations

import typer

from brokerlb.cli.admin_common import kv_table, list_table, run, split_list

tenants = typer.Typer(no_args_is_help=True, help="Tenants: allowed clusters and admin roles.")

_CLUSTERS = typer.Option(
    ..., "--allowed-clusters", "-c", help="clusters the tenant may use (comma-separated)"
)
_ROLES = typer.Option([], "--admin-roles", "-r", help="admin roles (comma-separated)")


@tenants.command("list")
def tenants_list(ctx: typer.Context) -> None:
    """Every tenant."""
    run(ctx, lambda a: a.get_tenants(), lambda names: list_table("tenants", "tenant", names))


@tenants.command("get")
def tenants_get(ctx: typer.Context, tenant: str) -> None:
    """A tenant's admin roles and allowed clusters."""
    run(ctx, lambda a: a.get_tenant(tenant), lambda info: kv_table(tenant, info))


@tenants.command("create")
def tenants_create(
    ctx: typer.Context, tenant: str, clusters: list[str] = _CLUSTERS, roles: list[str] = _ROLES
) -> None:
    """Create a tenant."""
    run(
        ctx,
        lambda a: a.create_tenant(
            tenant, allowed_clusters=split_list(clusters), admin_roles=split_list(roles)
        ),
        done=f"created tenant {tenant}",
    )


@tenants.command("update")
def tenants_update(
    ctx: typer.Context, tenant: str, clusters: list[str] = _CLUSTERS, roles: list[str] = _ROLES
) -> None:
    """Replace a tenant's allowed clusters and admin roles."""
    run(
        ctx,
        lambda a: a.update_tenant(
            tenant, allowed_clusters=split_list(clusters), admin_roles=split_list(roles)
        ),
        done=f"updated tenant {tenant}",
    )


@tenants.command("delete")
def tenants_delete(
    ctx: typer.Context,
    tenant: str,
    force: bool = typer.Option(
        False, "--force", "-f", help="delete its namespaces first (forceDeleteTenantAllowed)"
    ),
) -> None:
    """Delete a tenant (it must have no namespaces, unless --force)."""
    run(ctx, lambda a: a.delete_tenant(tenant, force=force), done=f"deleted tenant {tenant}")
