#include "topic.h"

#include "keygroup.h"

int ck_topic_owner(const char *topic, int partition, int readers)
{
    int32_t h = ck_kg_java_hash(topic, strlen(topic));
    int32_t start = (int32_t)(((uint32_t)h * 31u) & 0x7FFFFFFFu) % readers;
    return (start + partition) % readers;
}
