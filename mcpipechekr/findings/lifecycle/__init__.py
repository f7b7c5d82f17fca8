"""lifecycle.db: what cannot be derived again.

Registered findings and annotations (`store`), the lifecycle states and their history
(`states`), and the versioned schema of them all (`migrations`). Promotion writes here;
verification moves findings through their states.
"""
