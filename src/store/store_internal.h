/* store_internal.h — the store's schema migrations, shared by store.c and the migration test. */
#ifndef EC_STORE_INTERNAL_H
#define EC_STORE_INTERNAL_H

/* PRAGMA application_id of an ecocompute database: "ECOC". A file whose id is anything else
 * (0 with tables present included) is foreign and never written to. */
#define EC_STORE_APPLICATION_ID 0x45434F43

/* ec_store_migrations[v - 1] turns a version v-1 database into version v (v = 1 creates it).
 * Each runs in one transaction together with the version bump; released migrations are never
 * edited, only appended. */
extern const char *const ec_store_migrations[];

#endif
