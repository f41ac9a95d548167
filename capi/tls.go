//go:build cgo

package main

// The per-thread texts (the last error, the last conversion notice) live in C
// thread-specific storage: a C thread that calls into Go runs its goroutine on
// that same thread, so Go writes the calling thread's copy. This file has no
// //export, so its preamble may define functions.

/*
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

// pthread keys, not __thread: the Go runtime already takes most of the
// static TLS a library loaded with dlopen (ctypes) may use.

#define DABLOOMS_TEXT_MAX 1024

struct dablooms_texts {
	char err[DABLOOMS_TEXT_MAX];
	char conv[DABLOOMS_TEXT_MAX];
	int conv_set;
};

static pthread_key_t dablooms_texts_key;
static pthread_once_t dablooms_texts_once = PTHREAD_ONCE_INIT;

static void dablooms_texts_init(void) {
	pthread_key_create(&dablooms_texts_key, free);
}

static struct dablooms_texts *dablooms_texts(int create) {
	pthread_once(&dablooms_texts_once, dablooms_texts_init);
	struct dablooms_texts *t = pthread_getspecific(dablooms_texts_key);
	if (t == NULL && create) {
		t = calloc(1, sizeof *t);
		if (t != NULL && pthread_setspecific(dablooms_texts_key, t) != 0) {
			free(t);
			t = NULL;
		}
	}
	return t;
}

static void dablooms_copy_text(char *dst, const char *s, size_t n) {
	if (n >= DABLOOMS_TEXT_MAX) n = DABLOOMS_TEXT_MAX - 1;
	if (n > 0) memcpy(dst, s, n);
	dst[n] = 0;
}

__attribute__((visibility("hidden"))) void dablooms_set_error_text(const char *s, size_t n) {
	struct dablooms_texts *t = dablooms_texts(1);
	if (t != NULL) dablooms_copy_text(t->err, s, n);
}

__attribute__((visibility("hidden"))) void dablooms_set_conversion_text(const char *s, size_t n, int set) {
	struct dablooms_texts *t = dablooms_texts(set);
	if (t == NULL) return;
	t->conv_set = set;
	dablooms_copy_text(t->conv, s, set ? n : 0);
}

const char *dablooms_last_error(void) {
	struct dablooms_texts *t = dablooms_texts(0);
	return t != NULL ? t->err : "";
}

const char *dablooms_last_conversion(void) {
	struct dablooms_texts *t = dablooms_texts(0);
	return t != NULL && t->conv_set ? t->conv : NULL;
}
*/
import "C"

import "unsafe"

// setError records err as the calling thread's last error text: fn, then
// what err means (message).
func setError(fn string, err error) { setFileError(fn, err, "", 0) }

// setFileError is setError for a call on the file at path, through a
// handle of kind k (0: none yet).
func setFileError(fn string, err error, path string, k kind) {
	s := fn + ": " + message(err, path, k)
	C.dablooms_set_error_text((*C.char)(unsafe.Pointer(unsafe.StringData(s))), C.size_t(len(s)))
}

// setConversion records the calling thread's conversion notice; "" clears it.
func setConversion(s string) {
	if s == "" {
		C.dablooms_set_conversion_text(nil, 0, 0)
		return
	}
	C.dablooms_set_conversion_text((*C.char)(unsafe.Pointer(unsafe.StringData(s))), C.size_t(len(s)), 1)
}
