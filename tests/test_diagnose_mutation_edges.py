"""Edge tables written against the survivors of the mutation run (issue 20): diagnose.

Filled in by the issue-20 work; see tests/mutation_survivors.md."""
