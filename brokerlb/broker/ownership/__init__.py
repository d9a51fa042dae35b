"""Who serves each bundle: the ownership channel and its executor, the lookup, bundles and ownership stories."""
