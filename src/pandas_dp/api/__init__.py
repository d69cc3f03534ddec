"""The API layer: joins engines, accounting and mechanisms into releases on pandas objects."""
