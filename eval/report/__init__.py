"""The generator of eval/RESULTS.md: sections rendered from templates and committed records."""
