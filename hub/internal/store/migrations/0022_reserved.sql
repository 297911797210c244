-- Reserved for another branch's migration: this placeholder keeps the
-- versions contiguous on its own and is replaced by that migration.
SELECT 1;
