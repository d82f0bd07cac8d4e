"""``tuneplane-admin durability``: the facts the stores give of themselves (``facts``, read by
``read``), what they support claiming of the loss of one machine or broker (``claims``,
``kafka_claims``: pure), and how that is printed (``report``, ``command``)."""
