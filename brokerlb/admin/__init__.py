"""Clients of the broker REST API."""

from brokerlb.admin.client import DEFAULT_URL, MAX_REDIRECTS, AdminClient, AsyncAdminClient

__all__ = ["AdminClient", "AsyncAdminClient", "DEFAULT_URL", "MAX_REDIRECTS"]
