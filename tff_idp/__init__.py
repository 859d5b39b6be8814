"""tff-idp."""
