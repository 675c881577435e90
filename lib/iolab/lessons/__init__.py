"""One subpackage per lesson, named by topic: its model, probes, views and exercises. Each imports only the core."""
