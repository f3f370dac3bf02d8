"""The types of Ice's `Ice/Identity.ice`, which generated code that includes it imports: the
`Ice` package defines them (`Ice._t_Identity` and the rest)."""

import Ice  # noqa: F401
