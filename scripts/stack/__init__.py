"""The local services the scripts run, one module each: ``postgres``, ``kafka`` and ``s3``
(SeaweedFS) for scripts/services, ``dex`` for scripts/oidc; ``common`` holds where they keep
their state (``.services/``) and the helpers of ``scripts.lib`` bound to it."""
