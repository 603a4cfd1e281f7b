"""trajforge's shared package: schema, settings, errors, storage, queue, web and client."""
