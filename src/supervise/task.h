/* The supervised tasks: notifications answered, sockets taken, memory read and written. */
#ifndef BACKOFF_SUPERVISE_TASK_H
#define BACKOFF_SUPERVISE_TASK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The seccomp listener whose notifications are answered; set once, before any thread. */
void task_listen(int listener);

/* Answer notification @id with @err (0: success) as the call's result. */
void task_reply(uint64_t id, int err);

/* Let the kernel make the call of notification @id, as without the supervisor. */
void task_continue(uint64_t id);

/* Whether notification @id still waits (its task neither interrupted nor gone). */
bool task_id_valid(uint64_t id);

/* The process of thread @tid (from /proc), or -1. */
pid_t task_tgid(pid_t tid);

/* A pidfd for thread @tid, a thread of its process, often not the leader; or -1. */
int task_pidfd(pid_t tid);

/* A duplicate of @fd of the task of @pidfd (pidfd_getfd), or -1 with errno. */
int task_getfd(int pidfd, int fd);

/* Read or write @len bytes at @addr in the memory of @pid: whether all were. */
bool task_read(pid_t pid, uint64_t addr, void *buf, size_t len);
bool task_write(pid_t pid, uint64_t addr, void *buf, size_t len);

#endif
