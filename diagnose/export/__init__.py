"""`diagnose export`: the KB's line signals as Sigma rules, and through pySigma's backends as LogQL (Loki)
and Lucene / query DSL (Elasticsearch / OpenSearch); the `[export]` extra.

dialect.py rewrites a signal's pattern (Python `regex`) to RE2 and to Lucene's regexp, or says why it
cannot; sigma.py builds one Sigma rule per KB rule and lists what a query cannot express (fact
conditions, weak signals, untranslatable patterns); backends.py runs pySigma. Alerts fire on the line;
the full diagnosis then runs on the node (`diagnose`) or over the lake (`diagnose fleet`)."""
