"""The types of Ice's `Ice/Context.ice`, which generated code that includes it imports: the
`Ice` package defines them (`Ice._t_Context` and the rest)."""

import Ice  # noqa: F401
