/* A program written against dablooms.h: spam links in front of a database.
 *   example FILE */
#include <stdio.h>
#include <string.h>

#include "dablooms.h"

int main(int argc, char **argv) {
	const char *file = argc > 1 ? argv[1] : "/tmp/example.dbl";
	const char *spam[] = {"http://spam.example/a", "http://spam.example/b", "http://spam.example/c"};
	int i;

	printf("dablooms %s\n", dablooms_version());
	scaling_bloom_t *bloom = new_scaling_bloom(1000, 0.01, file);
	if (bloom == NULL) {
		fprintf(stderr, "new_scaling_bloom: %s\n", dablooms_last_error());
		return 1;
	}
	for (i = 0; i < 3; i++) /* the row id of each link: 100, 101, 102 */
		scaling_bloom_add(bloom, spam[i], strlen(spam[i]), 100 + i);
	if (!scaling_bloom_remove(bloom, spam[1], strlen(spam[1]), 101))
		fprintf(stderr, "remove: %s\n", dablooms_last_error());
	scaling_bloom_flush(bloom);
	printf("mem_seqnum %llu, disk_seqnum %llu\n", (unsigned long long)scaling_bloom_mem_seqnum(bloom),
	       (unsigned long long)scaling_bloom_disk_seqnum(bloom));
	free_scaling_bloom(bloom);

	bloom = new_scaling_bloom_from_file(1000, 0.01, file);
	if (bloom == NULL) {
		fprintf(stderr, "new_scaling_bloom_from_file: %s\n", dablooms_last_error());
		return 1;
	}
	for (i = 0; i < 3; i++)
		printf("%s: %s\n", spam[i], scaling_bloom_check(bloom, spam[i], strlen(spam[i])) ? "maybe spam" : "not spam");
	free_scaling_bloom(bloom);
	return 0;
}
