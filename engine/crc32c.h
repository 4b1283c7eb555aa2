/*
 * crc32c.h - CRC-32C (Castagnoli), the checksum of every checkpoint and
 * savepoint file: a truncated or damaged file is caught on restore.
 */
#ifndef CK_CRC32C_H
#define CK_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Extends crc (start with 0) over data[0..len). */
uint32_t ck_crc32c(uint32_t crc, const void *data, size_t len);

/* The same by table, on any CPU: what the instruction is tested against. */
uint32_t ck_crc32c_portable(uint32_t crc, const void *data, size_t len);

#endif
