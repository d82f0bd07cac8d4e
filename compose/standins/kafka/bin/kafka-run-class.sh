#!/bin/sh
# Runs a Kafka class with the image's jars, like Kafka's own kafka-run-class.sh.
exec java ${KAFKA_HEAP_OPTS:--Xmx256m} -cp "/opt/kafka/libs/*" "$@"
