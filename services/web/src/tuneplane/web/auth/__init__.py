"""Who calls and what they may do, and what every request and answer is held to: tokens and
roles (``access``), browser sessions (``browser``), sign-in through the team's OpenID
Connect provider (``oidc``, ``oidc_settings``) and its throttle (``throttle``), requests
bounded before they are trusted (``admission``), security headers (``headers``) and the
type user bytes are served as (``mediatype``)."""
