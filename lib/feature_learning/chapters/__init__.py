"""Per-chapter sizes and recipes: what each profile runs, in one place per chapter."""
