/* fuzz_tls_accept.c — libFuzzer target for the server's TLS accept path:
 * the input is what a client sends first (a ClientHello and any records
 * after it), fed through memory BIOs into an SSL from the listener's own
 * context builder (tls_ctx_build: spindle's defaults, two certificates
 * chosen by SNI, ALPN, the shared session-ticket callback). Each input runs
 * twice, at once and split in two at a point it chooses: both must end the
 * same way (refused, or waiting for the client's next flight; never a
 * finished handshake, which needs the server's random), and everything the
 * server writes must be whole TLS records. */
#include "net/tls_ctx.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Throwaway self-signed P-256 certificates and keys (localhost; a.test and
 * *.b.test), made for this target with openssl req and used for nothing
 * else. */
static const char *const pem[4] = {
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBmjCCAUGgAwIBAgIUOGOoGLCshGx8eZwSEPtrFaBvcpgwCgYIKoZIzj0EAwIw\n"
    "FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTIwMTEyMDQxNFoYDzIxMjYxMTA3\n"
    "MTIwNDE0WjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO\n"
    "PQMBBwNCAASlv1pfzieqdAmtpbHNH+BQ+0a7e7z5Cryliu1Thaff0Yqdl+hJPTbO\n"
    "YqFLSqDp7ytlbu/KTRYKxayIxnPK40/Ho28wbTAdBgNVHQ4EFgQUgHxuJu1o8EtL\n"
    "fBLLqW4vbkZ9SbMwHwYDVR0jBBgwFoAUgHxuJu1o8EtLfBLLqW4vbkZ9SbMwDwYD\n"
    "VR0TAQH/BAUwAwEB/zAaBgNVHREEEzARgglsb2NhbGhvc3SHBH8AAAEwCgYIKoZI\n"
    "zj0EAwIDRwAwRAIgcr+Fhd5ZFiWKjo4rbuArZXJ3/R9vP4PZ07/+ch1ogPgCIEue\n"
    "HHwIMwRjqsWUlOUJqM+VMtVRy997y23YGU/hzrqs\n"
    "-----END CERTIFICATE-----\n",
    "-----BEGIN PRIVATE KEY-----\n"
    "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg2Jqh3djkbkgDg3ey\n"
    "7b2pvaQYbYTbxoe597rE6AGVBYuhRANCAASlv1pfzieqdAmtpbHNH+BQ+0a7e7z5\n"
    "Cryliu1Thaff0Yqdl+hJPTbOYqFLSqDp7ytlbu/KTRYKxayIxnPK40/H\n"
    "-----END PRIVATE KEY-----\n",
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBljCCATygAwIBAgIUJOaDXaRKoOHB/OubB80qtlvzv/gwCgYIKoZIzj0EAwIw\n"
    "ETEPMA0GA1UEAwwGYS50ZXN0MCAXDTI2MTIwMTEyMDQxNVoYDzIxMjYxMTA3MTIw\n"
    "NDE1WjARMQ8wDQYDVQQDDAZhLnRlc3QwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNC\n"
    "AAT5JDpYjlJqIRx2uZYmevRCzp/aI87I7kxJphAlmrzId9DiCDx9HXI+c/p7ONkY\n"
    "xK2boHIAQ6bAYvlWvGX3DBLCo3AwbjAdBgNVHQ4EFgQUx4x1RolX+1IRyOxC7l2n\n"
    "10ZF7EUwHwYDVR0jBBgwFoAUx4x1RolX+1IRyOxC7l2n10ZF7EUwDwYDVR0TAQH/\n"
    "BAUwAwEB/zAbBgNVHREEFDASggZhLnRlc3SCCCouYi50ZXN0MAoGCCqGSM49BAMC\n"
    "A0gAMEUCIQC3szbpbtkQp/NXDWZ2tP1bNeSSGP2f6gUPpO1AFOwGZAIgH/DlH/BD\n"
    "GfBiru//lMmRByiEgPkN+QUHOI/9Np1me2g=\n"
    "-----END CERTIFICATE-----\n",
    "-----BEGIN PRIVATE KEY-----\n"
    "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgcsl7vEHJPLTnx7RZ\n"
    "LJjmb7BuwqXMov+PUGF0h54CrRKhRANCAAT5JDpYjlJqIRx2uZYmevRCzp/aI87I\n"
    "7kxJphAlmrzId9DiCDx9HXI+c/p7ONkYxK2boHIAQ6bAYvlWvGX3DBLC\n"
    "-----END PRIVATE KEY-----\n",
};

static tls_ctx *ctx;

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    char dir[] = "/tmp/fuzz_tls_accept.XXXXXX", path[4][64], err[512];
    if (!mkdtemp(dir))
        abort();
    tls_config cfg = {.ncerts = 2, .min_version = 12, .cert_reqs = TLS_VERIFY_NONE};
    for (int i = 0; i < 4; i++) {
        snprintf(path[i], sizeof path[i], "%s/%d.pem", dir, i);
        write_file(path[i], pem[i]);
    }
    cfg.certfiles[0] = path[0], cfg.keyfiles[0] = path[1];
    cfg.certfiles[1] = path[2], cfg.keyfiles[1] = path[3];
    ctx = tls_ctx_build(&cfg, err, sizeof err);
    for (int i = 0; i < 4; i++)
        unlink(path[i]);
    rmdir(dir);
    if (!ctx) {
        fprintf(stderr, "fuzz_tls_accept: %s\n", err);
        abort();
    }
    return 0;
}

/* The server's output must be whole records: a content type, version 3.x
 * (an alert refusing the client's version echoes that version), a length
 * within the limit. */
static void check_records(BIO *out) {
    char *p;
    long n = BIO_get_mem_data(out, &p);
    const unsigned char *b = (const unsigned char *)p;
    for (long i = 0; i < n;) {
        if (n - i < 5 || b[i] < 0x14 || b[i] > 0x17 || (b[i] != 0x15 && b[i + 1] != 3))
            abort();
        long len = (long)b[i + 3] << 8 | b[i + 4];
        if (len > 16384 + 2048 || (i += 5 + len) > n)
            abort();
    }
}

/* Runs the handshake on the bytes, in two pieces at split: 1 refused, 0
 * waiting for more. */
static int accept_bytes(const uint8_t *data, size_t size, size_t split) {
    SSL *ssl = SSL_new(tls_ctx_default(ctx)); /* as tls_ctx_new_ssl, on memory BIOs */
    BIO *in = BIO_new(BIO_s_mem()), *out = BIO_new(BIO_s_mem());
    if (!ssl || !in || !out)
        abort();
    SSL_set_accept_state(ssl);
    BIO_set_mem_eof_return(in, -1); /* empty is "no data yet", not end of stream */
    SSL_set_bio(ssl, in, out);
    int verdict = 0;
    size_t at = 0;
    for (int piece = 0; piece < 2 && !verdict; piece++) {
        size_t end = piece ? size : split;
        if (end > at && BIO_write(in, data + at, (int)(end - at)) != (int)(end - at))
            abort();
        at = end;
        int rc = SSL_do_handshake(ssl);
        if (rc == 1)
            abort(); /* finished without the client's Finished: impossible */
        int e = SSL_get_error(ssl, rc);
        if (e != SSL_ERROR_WANT_READ)
            verdict = 1;
    }
    check_records(out);
    SSL_free(ssl);
    ERR_clear_error();
    return verdict;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    size_t split = size ? (size_t)data[size - 1] % (size + 1) : 0;
    int whole = accept_bytes(data, size, size);
    int pieces = accept_bytes(data, size, split);
    /* The same bytes in two pieces end the same way, except that a refusal
     * seen early stops the bytes after it from mattering. */
    if (whole != pieces)
        abort();
    return 0;
}
