"""Consuming and producing the project's topics.

``message``, ``port``, ``poison``, ``pipeline`` and ``memory`` need no Kafka client: they are
the consumer pipeline and its in-memory broker. ``topics`` and ``adapter`` talk to Kafka
through aiokafka.
"""
