"""The read path: hybrid search (:mod:`.search`), the pyramid (:mod:`.pyramid`, :mod:`.line_costs`) and answers."""
