/* cuda_check.c — formats the error messages of cuda_check.h. */
#include "common/cuda_check.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static int fail(const char *file, int line, const char *what, const char *op_fmt, va_list ap)
{
    char op[384];
    vsnprintf(op, sizeof op, op_fmt, ap);
    return ec_set_error("%s: %s (%s:%d)", op, what, base_name(file), line);
}

int ec_cuda_fail(const char *file, int line, cudaError_t err, const char *op_fmt, ...)
{
    va_list ap;
    va_start(ap, op_fmt);
    fail(file, line, cudaGetErrorString(err), op_fmt, ap);
    va_end(ap);
    return -1;
}

int ec_cublas_fail(const char *file, int line, cublasStatus_t st, const char *op_fmt, ...)
{
    va_list ap;
    va_start(ap, op_fmt);
    fail(file, line, cublasGetStatusString(st), op_fmt, ap);
    va_end(ap);
    return -1;
}
