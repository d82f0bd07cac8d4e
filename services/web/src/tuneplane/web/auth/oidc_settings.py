"""What ``tuneplane-web`` reads to sign people in through the team's OpenID Connect
provider. Unset issuer: no provider, local passwords only."""

from __future__ import annotations

from tuneplane.contract.settings import Settings, SettingsError, setting
from tuneplane.controlplane.federated import Grant, parse_mapping

ISSUER = "TUNEPLANE_WEB_OIDC_ISSUER"
NEEDED = ("TUNEPLANE_WEB_OIDC_CLIENT_ID", "TUNEPLANE_WEB_OIDC_CLIENT_SECRET",
          "TUNEPLANE_WEB_OIDC_REDIRECT_URI")


class OidcSettings(Settings):
    issuer: str | None = setting(
        ISSUER, default=None,
        help="the OpenID Connect provider's issuer URL (its `/.well-known/openid-configuration`"
             " is read at each start); unset: local passwords only")
    client_id: str | None = setting(NEEDED[0], default=None,
                                    help="this service's client id at the provider")
    client_secret: str | None = setting(NEEDED[1], default=None, secret=True,
                                        help="this service's client secret at the provider")
    redirect_uri: str | None = setting(
        NEEDED[2], default=None,
        help="the callback URL registered at the provider: `https://<this service>/auth/callback`")
    groups: list[Grant] = setting(
        "TUNEPLANE_WEB_OIDC_GROUPS", parse=parse_mapping, default_factory=list, shown="(none)",
        help="groups to roles, comma-separated: `group=project:role` (viewer, editor, owner) "
             "or `group=admin`; the projects named are the provider's to decide")
    username_claim: str = setting(
        "TUNEPLANE_WEB_OIDC_USERNAME_CLAIM", default="email",
        help="the ID token claim that names the user (`email`: taken only when the token's "
             "`email_verified` is true)")

    def __post_init__(self) -> None:
        if self.issuer is None:
            return
        missing = [name for name, value in zip(
            NEEDED, (self.client_id, self.client_secret, self.redirect_uri), strict=True)
            if not value]
        if missing:
            raise SettingsError(f"{ISSUER} is set: {', '.join(missing)} must be too",
                                tuple(missing))

    @property
    def enabled(self) -> bool:
        return self.issuer is not None
