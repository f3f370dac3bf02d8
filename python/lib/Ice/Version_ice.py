"""The types of Ice's `Ice/Version.ice`, which generated code that includes it imports: the
`Ice` package defines them (`Ice._t_Version` and the rest)."""

import Ice  # noqa: F401
