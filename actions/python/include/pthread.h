/* The engine has no threads; CPython's headers name this type only (cpython/pythread.h). */
#ifndef OW_PTHREAD_H
#define OW_PTHREAD_H
typedef unsigned pthread_key_t;
#endif
