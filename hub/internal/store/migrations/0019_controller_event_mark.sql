-- What names the controller's log entry at event_index in its history
-- (its raft term and when it was appended), from its event frames ('':
-- unknown, or a controller older than 2026-11-23). The indexer resumes
-- with since=event_index&mark=event_mark, so that a controller restored
-- from an older copy, which has since gone past that index in another
-- history, answers with a reset instead of the events after it.
ALTER TABLE controllers ADD COLUMN event_mark text NOT NULL DEFAULT '';
